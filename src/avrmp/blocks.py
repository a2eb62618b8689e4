"""Building blocks shared by every technique: the bounded column accumulator, the operand cache,
carry rippling, absolute differences and conditional negation.

Each block knows the largest value its registers can hold at each point, so it leaves out carry
instructions that provably add zero (the first products of a column, the top of a short column).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .program import Mem, PointerWindow, Program

PRODUCT_MAX = 0xFF * 0xFF


class Accumulator:
    """A little-endian multi-register accumulator with a known upper bound on its value.

    Registers whose logical value is zero may still hold garbage (`valid` False); they are cleared
    lazily, only when a carry can actually reach them.
    """

    def __init__(self, p: Program, regs: Sequence[int], zero: int, zero_hi=None,
                 fresh=None) -> None:
        """zero_hi: a register pairing with `zero` for MOVW, and fresh: a supply of new registers
        for the tops of later columns; together they let one MOVW clear two tops at once."""
        self.p, self.regs, self.zero = p, list(regs), zero
        self.bound = 0
        self.valid = [False] * len(self.regs)
        self.zero_hi, self.fresh = zero_hi, fresh
        self.next_tops: list = []  # registers already cleared for the coming columns

    def _limb_bound(self, i: int) -> int:
        return self.bound >> (8 * i)

    def ensure(self, i: int) -> None:
        if self.valid[i]:
            return
        if self.zero_hi is not None and self.fresh is not None and not self.next_tops:
            ahead = self.fresh()
            self.p.copy_pair(self.regs[i], ahead, self.zero, self.zero_hi, comment="clear two")
            self.next_tops.append(ahead)
        else:
            self.p.clr(self.regs[i])
        self.valid[i] = True

    def add(self, lo: int, hi: int | None, value_max: int, comment: str = "") -> None:
        """acc += hi:lo (hi None for a single byte), where the added value is at most value_max."""
        p, r = self.p, self.regs
        new_bound = self.bound + value_max
        if new_bound >= 1 << (8 * len(r)):
            raise AssertionError("accumulator overflow")
        width = 1 if hi is None else 2
        if not any(self.valid[:width]):
            # Nothing to add to: copy instead (one MOVW when the registers pair up).
            if width == 2:
                p.copy_pair(r[0], r[1], lo, hi, comment=comment)
            else:
                p.mov(r[0], lo, comment=comment)
            for i in range(width):
                self.valid[i] = True
            self.bound = new_bound
            return
        for i in range(width):
            self.ensure(i)
        p.add(r[0], lo, comment=comment)
        if width == 2:
            p.adc(r[1], hi)
        # Ripple the carry only as far as it can go.
        for i in range(width, len(r)):
            if (new_bound >> (8 * i)) == 0:
                break
            self.ensure(i)
            p.adc(r[i], self.zero)
        self.bound = new_bound

    def add_at(self, i: int, reg, comment: str = "") -> None:
        """acc += reg * 256^i for a single byte."""
        p, r = self.p, self.regs
        new_bound = self.bound + (0xFF << (8 * i))
        if new_bound >= 1 << (8 * len(r)):
            raise AssertionError("accumulator overflow")
        if not self.valid[i] and not self.bound >> (8 * i):
            p.mov(r[i], reg, comment=comment)  # that byte is zero and nothing can carry into it
            self.valid[i] = True
        else:
            self.ensure(i)
            p.add(r[i], reg, comment=comment)
            for j in range(i + 1, len(r)):
                if (new_bound >> (8 * j)) == 0:
                    break
                self.ensure(j)
                p.adc(r[j], self.zero)
        self.bound = new_bound

    def add_product(self, comment: str = "") -> None:
        """acc += r1:r0 (the MUL result)."""
        self.add(0, 1, PRODUCT_MAX, comment)

    def double(self) -> None:
        """acc *= 2."""
        p, r = self.p, self.regs
        new_bound = 2 * self.bound
        top = max(i for i in range(len(r)) if new_bound >> (8 * i))
        for i in range(top + 1):
            self.ensure(i)
        p.lsl(r[0])
        for i in range(1, top + 1):
            p.rol(r[i])
        self.bound = new_bound

    def shift_out(self, new_top=None):
        """Drop the low register (the caller has stored or kept it) and take `new_top` (default:
        the dropped register itself) as the new top register, logically zero."""
        low = self.regs.pop(0)
        self.valid.pop(0)
        if new_top is None and self.next_tops:
            self.regs.append(self.next_tops.pop(0))
            self.valid.append(True)
        else:
            self.regs.append(low if new_top is None else new_top)
            self.valid.append(False)
        self.bound >>= 8
        return low


class OperandCache:
    """Registers caching operand bytes, loaded on demand through pointer windows, with Belady's
    optimal eviction (the whole access sequence is known when the code is generated).

    `plan` is the exact sequence of (source, index) keys that `get` will be asked for.  When a source
    has no loads left, its pointer registers join the cache.
    """

    def __init__(
        self,
        p: Program,
        regs: Sequence[int],
        sources: dict[str, PointerWindow],
        plan: Sequence[tuple[str, int]],
        free_pointers: bool = True,
    ) -> None:
        self.p, self.sources, self.plan = p, sources, list(plan)
        self.t = 0
        self.loads = 0
        # next_use[t] = position of the next access to plan[t]'s key after t (or infinity).
        inf = len(self.plan) + 1
        self.next_use = [inf] * len(self.plan)
        last: dict[tuple[str, int], int] = {}
        for t in range(len(self.plan) - 1, -1, -1):
            self.next_use[t] = last.get(self.plan[t], inf)
            last[self.plan[t]] = t
        self.release_at: dict[int, str] = {}
        if free_pointers:
            for name, when in self._last_misses(len(regs)).items():
                self.release_at[when] = name
        self.free = list(regs)
        self.holder: dict[tuple[str, int], int] = {}  # key -> register
        self.key_next: dict[tuple[str, int], int] = {}  # key -> next use position
        self.released: set[str] = set()

    def _last_misses(self, nregs: int) -> dict[str, int]:
        """Dry run with a fixed register count: where each source is loaded for the last time."""
        cached: dict[tuple[str, int], int] = {}
        last: dict[str, int] = {}
        for t, key in enumerate(self.plan):
            if key not in cached:
                if len(cached) >= nregs:
                    victim = max(
                        (k for k in cached if t == 0 or k != self.plan[t - 1]),
                        key=cached.__getitem__,
                    )
                    del cached[victim]
                last[key[0]] = t
            cached[key] = self.next_use[t]
        return last

    def get(self, key: tuple[str, int], keep: tuple[str, int] | None = None) -> int:
        """Register holding `key`, loading it if needed; `keep` must not be evicted."""
        if self.plan[self.t] != key:
            raise AssertionError(f"cache access {key} out of plan order (expected {self.plan[self.t]})")
        reg = self.holder.get(key)
        if reg is None:
            if not self.free:
                victim = max(
                    (k for k in self.holder if k != keep), key=self.key_next.__getitem__
                )
                self.free.append(self.holder.pop(victim))
                del self.key_next[victim]
            reg = self.free.pop(0)
            source, index = key
            if source in self.released:
                raise AssertionError(f"load from {source} after its pointer was released")
            self.sources[source].load(reg, index, comment=f"{source}[{index}]")
            self.loads += 1
            self.holder[key] = reg
        self.key_next[key] = self.next_use[self.t]
        released = self.release_at.get(self.t)
        self.t += 1
        if released is not None:
            self.released.add(released)
            lo = {"Y": 28, "Z": 30}[self.sources[released].ptr]
            self.free.extend((lo, lo + 1))
        return reg

    def next(self, key: tuple[str, int]) -> int:
        """`get` that protects the previous key of the plan, exactly as the dry run that placed the
        pointer releases does, so the two runs evict alike (needed when the plan holds runs of keys
        from one source that the caller does not access as `pair`s)."""
        return self.get(key, keep=self.plan[self.t - 1] if self.t else None)

    def pair(self, ka: tuple[str, int], kb: tuple[str, int]) -> tuple[int, int]:
        ra = self.get(ka)
        return ra, self.get(kb, keep=ka)


# --- Blocks shared by the hybrid and operand-caching kernels -----------------------------------


def copy_pair(p: Program, d0: int, d1: int, s0: int, s1: int, comment: str = "") -> None:
    """d1:d0 = s1:s0, with one MOVW when both pairs are aligned."""
    if d0 % 2 == 0 and d1 == d0 + 1 and s0 % 2 == 0 and s1 == s0 + 1:
        p.movw(d0, s0, comment=comment)
    else:
        p.mov(d0, s0, comment=comment)
        p.mov(d1, s1)


class WideAccumulator(Accumulator):
    """An `Accumulator` that also adds multi-byte values at any byte offset (a block product's rows
    land at offsets 0..d-1 of a 2d+1-byte accumulator).  The same bound reasoning applies: a byte
    above the new bound cannot receive a carry, and bytes at and above the offset that are still
    logically zero are filled by copying instead of adding."""

    def add_at(self, pos: int, src: Sequence[int], value_max: int, comment: str = "") -> None:
        """acc += src * 256**pos, where the little-endian register value src is at most value_max."""
        p, r = self.p, self.regs
        width = len(src)
        new_bound = self.bound + (value_max << (8 * pos))
        if new_bound >= 1 << (8 * len(r)) or pos + width > len(r):
            raise AssertionError("accumulator overflow")
        if self.bound >> (8 * pos) == 0:
            # Bytes pos.. are logically zero: a copy is an exact addition.
            i = 0
            while i < width:
                if i + 1 < width:
                    copy_pair(p, r[pos + i], r[pos + i + 1], src[i], src[i + 1],
                                comment=comment if i == 0 else "")
                    i += 2
                else:
                    p.mov(r[pos + i], src[i], comment=comment if i == 0 else "")
                    i += 1
            for i in range(pos, pos + width):
                self.valid[i] = True
            self.bound = new_bound
            return
        for i in range(pos, pos + width):
            self.ensure(i)
        p.add(r[pos], src[0], comment=comment)
        for i in range(1, width):
            p.adc(r[pos + i], src[i])
        for i in range(pos + width, len(r)):
            if (new_bound >> (8 * i)) == 0:
                break
            self.ensure(i)
            p.adc(r[i], self.zero)
        self.bound = new_bound


def row_order(d: int) -> list[int]:
    """The order in which `mul_row` multiplies a[0..d-1]: even indices, then odd ones."""
    return list(range(0, d, 2)) + list(range(1, d, 2))


def mul_row(
    p: Program, d: int, get_a: Callable[[int], int], b: int, t: Sequence[int], zero: int,
    names: tuple[str, str] = ("a", "b"),
) -> None:
    """t[0..d] = a[0..d-1] * b, the in-register d x 1 block of operand scanning.

    The products a[i]*b of even i occupy disjoint byte pairs (i, i+1), so they are placed with MOVW
    and no addition; each odd product is then added at (i, i+1) and its carry lands in t[i+2], which
    holds the high byte of an even product (at most 0xFE), so it can never carry further.  No carry
    chain crosses a MUL.  `get_a(i)` returns the register holding a[i] (it may load it); it is
    called in `row_order(d)`.
    """
    if len(t) != d + 1:
        raise AssertionError("mul_row needs d+1 target registers")
    an, bn = names
    for i in row_order(d):
        ra = get_a(i)
        p.mul(ra, b, comment=f"{an}[{i}]*{bn}")
        if i % 2 == 0:
            copy_pair(p, t[i], t[i + 1], 0, 1)
        elif i + 1 == d:  # t[d] holds nothing yet: the high byte (+carry, <= 0xFF) moves there
            p.add(t[i], 0)
            p.adc(1, zero)
            p.mov(t[d], 1)
        else:
            p.add(t[i], 0)
            p.adc(t[i + 1], 1)
            p.adc(t[i + 2], zero)


def move_pointer(p: Program, ptr: str, delta: int, comment: str = "") -> None:
    """ptr += delta (X, Y or Z): ADIW/SBIW when |delta| <= 63, else SUBI/SBCI on the pair."""
    lo = {"X": 26, "Y": 28, "Z": 30}[ptr]
    if 0 < delta <= 63:
        p.adiw(lo, delta, comment=comment)
    elif -63 <= delta < 0:
        p.sbiw(lo, -delta, comment=comment)
    elif delta:
        neg = (-delta) & 0xFFFF
        p.subi(lo, neg & 0xFF, comment=comment)
        p.sbci(lo + 1, neg >> 8)


def emit_abs_diff(p, x: Sequence, y, zero) -> object:
    """x := |x - y| in place (y may be shorter: missing bytes count as zero; or a function giving
    y's byte i, called just before it is needed, so loads interleave with the subtraction);
    returns a register holding the sign mask, 0xFF when x < y and 0x00 otherwise.

    Constant time: the subtraction's borrow becomes the mask (SBC m, m), and (d XOR m) - m negates
    d exactly when m = 0xFF, without NEG and without a branch.
    """
    get = y if callable(y) else (lambda i: y[i] if i < len(y) else None)
    for i, xi in enumerate(x):
        yi = get(i)
        p.emit("sub" if i == 0 else "sbc", xi, zero if yi is None else yi)
    mask = p.v("sign")
    p.sbc(mask, mask)
    emit_cond_negate(p, x, mask)
    return mask


def emit_cond_negate(p, x: Sequence, mask) -> None:
    """x := -x if mask = 0xFF, x if mask = 0x00 (two's complement over len(x) bytes)."""
    for xi in x:
        p.eor(xi, mask)
    for i, xi in enumerate(x):
        p.emit("sub" if i == 0 else "sbc", xi, mask)


def emit_add_chain(p, dst: Sequence, src: Sequence, zero, carry_in: bool = False) -> None:
    """dst += src over len(dst) bytes (src may be shorter; the carry ripples on through zero)."""
    for i, d in enumerate(dst):
        first = i == 0 and not carry_in
        p.emit("add" if first else "adc", d, src[i] if i < len(src) else zero)


def emit_ripple_mem(p, ptr: str, n: int, src, first_src=None, carry_in: bool = False,
                    name: str = "R") -> None:
    """The n bytes at ptr += src (one register for every byte, first_src for byte 0) in one
    carry chain, byte by byte: LD, ADC, ST with post-increment, which leave the carry alone, so
    nothing is parked and no pointer is adjusted (ptr ends n bytes further on)."""
    for q in range(n):
        v = p.v("h")
        p.ld(v, Mem(ptr), comment=f"{name}[{q}]")
        op = "adc" if q or carry_in else "add"
        p.emit(op, v, first_src if q == 0 and first_src is not None else src)
        p.st(Mem(ptr, "+"), v)


def emit_product(p, a: Sequence, b: Sequence, zero, addend: Sequence = (), zero_hi=None) -> list:
    """Product scanning of two register-resident byte strings, plus an addend at the low end
    (whose registers are consumed: its first two bytes become the accumulator), into fresh
    registers; returns exactly as many result bytes as the value can need."""
    na, nb = len(a), len(b)
    acc = Accumulator(p, [p.v("c"), p.v("c"), p.v("c")], zero, zero_hi, lambda: p.v("c"))
    for i, e in enumerate(addend[:2]):
        acc.regs[i] = e
        acc.valid[i] = True
        acc.bound += 0xFF << (8 * i)
    out = []
    for k in range(max(na + nb - 1, len(addend))):
        lo, hi = max(0, k - nb + 1), min(k, na - 1)
        for i in range(lo, hi + 1):
            p.mul(a[i], b[k - i], comment=f"{a[i].name}*{b[k - i].name}")
            acc.add_product()
        if 2 <= k + 1 < len(addend):  # the next column's addend byte, while its carry is cheap
            acc.add_at(1, addend[k + 1], comment="+ addend")
        acc.ensure(0)
        out.append(acc.regs[0])
        acc.shift_out(None if acc.next_tops else p.v("c"))
    while acc.bound:
        acc.ensure(0)
        out.append(acc.regs[0])
        acc.shift_out(None if acc.next_tops else p.v("c"))
    return out


def emit_square(p, a: Sequence, zero, addend: Sequence = (), zero_hi=None, w: int = 2,
                sink: Callable[[int, object], None] | None = None) -> list:
    """a^2 (plus a short addend at the low end) for a register-resident byte string, into fresh
    registers; returns exactly as many result bytes as the value can need (emit_product's contract).

    Each cross product a_i a_j (i < j) is computed once: product scanning accumulates
    S = sum_{i<j} a_i a_j 256^(i+j) with ordinary carries (with zero_hi, a register pairing with
    `zero`, the accumulator's new tops are cleared two at a time by MOVW), and the result
    2S + D (+ E), where D = sum a_i^2 256^(2i), is formed w bytes at a time (w even) by carry
    chains whose carries are parked in registers (LSR restores, ROL saves) across the MULs: the
    doubling (a ROL chain), the addition of D (w/2 squares, all but one parked by MOVW), and the
    addend E.  Once E's bytes run out, its last carry is folded into the next a_i^2 (which leaves
    room for it: a_i^2 + 1 < 2^16).  Wider chunks park fewer carries but keep more bytes live.
    sink(i, reg), if given, takes result byte i as soon as it is final (to store it at once, so
    finished bytes do not hold registers).  Straight-line."""
    n = len(a)
    if w < 2 or w % 2:
        raise AssertionError("emit_square needs an even chunk width")
    bound = ((1 << (8 * n)) - 1) ** 2 + ((1 << (8 * len(addend))) - 1)
    nres = (bound.bit_length() + 7) // 8
    fresh = (lambda: p.v("c")) if zero_hi is not None else None
    acc = Accumulator(p, [p.v("c"), p.v("c"), p.v("c")], zero, zero_hi, fresh)

    def s_byte(k: int):
        """Column k of S (None when it is provably zero)."""
        for i in range(max(0, k - n + 1), (k + 1) // 2):
            j = k - i
            if j > i:
                p.mul(a[i], a[j], comment=f"{a[i].name}*{a[j].name}")
                acc.add_product()
        byte = None
        if acc.bound:
            acc.ensure(0)
            byte = acc.regs[0]
        acc.shift_out(None if acc.next_tops else p.v("c"))
        return byte

    def mat(x):
        if x is None:
            x = p.v("x")
            p.clr(x)
        return x

    def park(c, comment: str):
        """Save the carry flag in c (a new register, cleared first, if c is None)."""
        if c is None:
            c = p.v(comment)
            p.clr(c)
        p.rol(c)
        return c

    # The doubling's carry and D's share one parking register: bit 0 (LSR restores, ROL saves)
    # and bit 7 (LSL restores, ROR saves); a restore without a carry pending gives C = 0.
    slot = {"2S": ("lsr", "rol"), "D": ("lsl", "ror")}
    pending = {"2S": False, "D": False}
    shared: list = []  # the parking register, once one is needed

    def restore(chain: str, will_park: bool) -> bool:
        """C = the chain's parked carry when one is pending or the chain will park (its save
        shifts the register back); returns whether a carry is pending."""
        if pending[chain] or (will_park and shared):
            p.emit(slot[chain][0], shared[0], comment=f"C = {chain}'s parked carry")
        return pending[chain]

    def save(chain: str) -> None:
        if not shared:
            shared.append(p.v("cc"))
            p.clr(shared[0])
        p.emit(slot[chain][1], shared[0], comment=f"park {chain}'s carry")
        pending[chain] = True

    def add_chain(x: list, src: list, carry_in: bool) -> bool:
        """x += src (None: nothing) after C = the carry (carry_in) or 0; bytes of x still provably
        zero take src by a copy.  Returns whether a carry may be out."""
        started = carry_in
        for t, s in enumerate(src):
            if not started and s is None:
                continue
            if not started and x[t] is None:
                x[t] = p.v("x")
                p.mov(x[t], s)
                continue
            x[t] = mat(x[t])
            p.emit("adc" if started else "add", x[t], zero if s is None else s)
            started = True
        return started

    out: list = []
    ce = None  # the addend chain's parked carry (None: no carry pending)
    for lo in range(0, nres, w):
        width = min(w, nres - lo)
        last = lo + width >= nres
        x = [s_byte(k) for k in range(lo, lo + width)]
        # 2S: x <<= 1 with the bit shifted out of the previous chunk.
        live = pending["2S"] or any(v is not None for v in x)
        park_2s = live and (not last or pending["D"])  # D's restore needs bit 7 in place
        if restore("2S", park_2s):
            x = [mat(v) for v in x]
            for v in x:
                p.rol(v)
        elif live:
            f = next(t for t, v in enumerate(x) if v is not None)
            x[f + 1 :] = [mat(v) for v in x[f + 1 :]]
            p.lsl(x[f], comment="2S")
            for v in x[f + 1 :]:
                p.rol(v)
        if park_2s:
            save("2S")
        # + D: this chunk's squares, the first in r1:r0, the others parked by MOVW.
        sq = [i for i in range(lo // 2, (lo + width + 1) // 2) if i < n]
        src: list = [None] * width
        for i in sq[1:]:
            p.mul(a[i], a[i], comment=f"{a[i].name}^2")
            t = (p.v("q"), p.v("q"))
            p.copy_pair(t[0], t[1], 0, 1)
            src[2 * i - lo : 2 * i - lo + 2] = t
        if sq:
            i = sq[0]
            p.mul(a[i], a[i], comment=f"{a[i].name}^2")
            if ce is not None and lo >= len(addend):
                p.add(0, ce, comment="fold the addend's carry into a_i^2")
                p.adc(1, zero)
                ce = None
            src[2 * i - lo : 2 * i - lo + 2] = [0, 1]
        src = src[:width]
        starts = pending["D"] or any(s is not None and v is not None for s, v in zip(src, x))
        if add_chain(x, src, restore("D", starts and not last)) and not last:
            save("D")
        # + E (the addend), then its carry ripples until it can be folded into an a_i^2.
        e = [addend[j] if j < len(addend) else None for j in range(lo, lo + width)]
        if ce is not None:
            p.lsr(ce)
        if add_chain(x, e, ce is not None) and not last:
            ce = park(ce, "ce")
        for v in x:
            out.append(mat(v))
            if sink is not None:
                sink(len(out) - 1, out[-1])
    assert acc.bound == 0
    return out


def _rows_cost(na: int, nb: int, addend: int) -> int:
    """Non-MUL cycles of emit_product_rows with rows over a (nb products each)."""
    row = 3 * nb - (nb % 2)
    first = row if addend else 2 * nb - (nb % 2)
    return first + (na - 1) * row


def rows_apply(na: int, nb: int, addend: int = 0) -> bool:
    """Whether emit_product_rows has a row-wise schedule for these lengths (else it falls back to
    product scanning)."""
    return min(na, nb) >= 2 and (addend == 0 or addend in (na, nb))


def emit_product_rows(p, a: Sequence, b: Sequence, zero, addend: Sequence = (),
                      zero_hi=None) -> list:
    """a * b (+ addend at the low end), emit_product's contract, by rows (operand scanning) whose
    products are added straight into the result with carry chains that never ripple through zero.

    Row i adds a_i * B (k = len(B) products at byte offsets i+j) to R, which holds i+k bytes and
    will hold i+k+1.  Products of one parity of j (the "temps" T_j, ending with the top one
    T_{k-1}) are parked by MOVW; every other product D_j is added as soon as it is computed:

        ADD R[i+j], lo ; ADC R[i+j+1], hi ; ADC R[i+j+2], T_{j+1}.hi ; ADC R[i+j+3], T_{j+3}.lo
        ADC T_{j+3}.hi, zero

    A product's high byte is at most 0xFE, so the final ADC cannot overflow: the carry stops
    there and that byte is added into R by the next chain.  The last chain ends in T_{k-1}.hi,
    which becomes R[i+k] itself (R < 2^(8(i+k+1)) after the row, so nothing carries out).  At the
    low end, odd k takes D_0 and D_1 (D_0 absorbs T_2.lo, its carry stops in T_2.hi); even k adds
    T_1.lo with its own two-instruction chain.  Each row costs 3k-1 (odd k) or 3k cycles besides
    the MULs, and no accumulator byte is ever cleared.  The first row (without an addend) is placed:
    products of even j by MOVW, the others added with their carry stopping in the next product's
    high byte.  Rows of six products (6x6 bytes, the blocks of 96- and 192-bit Karatsuba) run in
    two groups of three with one temporary pair at a time instead of two or three (row_of_six):
    the same 18 cycles a row, fewer registers.  Falls back to emit_product where `rows_apply`
    says no."""
    na, nb, ne = len(a), len(b), len(addend)
    if not rows_apply(na, nb, ne):
        return emit_product(p, a, b, zero, addend, zero_hi)
    # Rows over the operand that makes the schedule cheaper (an addend must fit the first row).
    options = [(x, y) for x, y in ((a, b), (b, a)) if ne in (0, len(y))]
    a, b = min(options, key=lambda o: (_rows_cost(len(o[0]), len(o[1]), ne), -len(o[1]) % 2))
    na, nb = len(a), len(b)
    k = nb
    bound = ((1 << (8 * na)) - 1) * ((1 << (8 * nb)) - 1) + ((1 << (8 * ne)) - 1)
    nres = (bound.bit_length() + 7) // 8

    def mul(i: int, j: int) -> None:
        p.mul(a[i], b[j], comment=f"{a[i].name}*{b[j].name}")

    def park(i: int, j: int) -> tuple:
        mul(i, j)
        t = (p.v("t"), p.v("t"))
        p.copy_pair(t[0], t[1], 0, 1)
        return t

    if ne:
        R = list(addend)
        first = 0
    else:
        # Row 0 placed: even j by MOVW (disjoint pairs), odd j added, carry into the next hi byte.
        R = [p.v("c") for _ in range(k + 1)]
        for j in range(0, k, 2):
            mul(0, j)
            p.copy_pair(R[j], R[j + 1], 0, 1)
        for j in range(1, k, 2):
            mul(0, j)
            p.add(R[j], 0)
            if j + 1 < k:
                p.adc(R[j + 1], 1)
                p.adc(R[j + 2], zero)  # R[j+2] is the high byte of a_0 b_{j+1}: no overflow
            else:  # the top product: R[k] is new
                p.adc(1, zero)
                p.mov(R[k], 1)
        first = 1
    def temp(T: dict, i: int, j: int) -> tuple:
        if j not in T:
            T[j] = park(i, j)
        return T[j]

    def chain(T: dict, i: int, j: int, lo_tail: bool) -> None:
        """D_j of row i, its carry absorbed from position i+j+2 on."""
        mul(i, j)
        p.add(R[i + j], 0)
        p.adc(R[i + j + 1], 1)
        if j + 2 == k:  # the top: T_{k-1}.hi becomes R[i+k]
            p.adc(T[k - 1][1], zero)
            return
        if lo_tail:  # D_0 of odd k: absorb T_2.lo, stop in T_2.hi
            p.adc(R[i + j + 2], T[j + 2][0])
            p.adc(T[j + 2][1], zero)
            return
        p.adc(R[i + j + 2], T[j + 1][1])
        p.adc(R[i + j + 3], T[j + 3][0])
        p.adc(T[j + 3][1], zero)

    spare_tops: list = []  # a top byte already cleared for the next row

    def row_of_six(i: int) -> None:
        """Row i for k = 6 in two groups of three products with one temporary pair at a time:
        T = a_i b_2 parked, b_0 and b_1 added with their carries stopping in T.hi (the window
        R[i..i+2], T.hi cannot overflow); then T.hi and b_4 in one chain into a new top byte,
        and T' = a_i b_3 parked for b_5's chain, which ends in that top byte."""
        t = park(i, 2)
        mul(i, 0)
        p.add(R[i], 0)
        p.adc(R[i + 1], 1)
        p.adc(R[i + 2], t[0])
        p.adc(t[1], zero)
        mul(i, 1)
        p.add(R[i + 1], 0)
        p.adc(R[i + 2], 1)
        p.adc(t[1], zero)
        if spare_tops:
            top = spare_tops.pop()
        elif zero_hi is not None and i + 1 < na:  # this row's top and the next row's: one MOVW
            top, spare = p.v("c"), p.v("c")
            p.copy_pair(top, spare, zero, zero_hi, comment="clear two tops")
            spare_tops.append(spare)
        else:
            top = p.v("c")
            p.clr(top)
        mul(i, 4)
        p.add(R[i + 3], t[1])
        p.adc(R[i + 4], 0)
        p.adc(R[i + 5], 1)
        p.adc(top, zero)
        t = park(i, 3)
        mul(i, 5)
        p.add(R[i + 3], t[0])
        p.adc(R[i + 4], t[1])
        p.adc(R[i + 5], 0)
        p.adc(top, 1)
        R.append(top)

    for i in range(first, na):
        assert len(R) == i + k
        T: dict[int, tuple] = {}
        if k == 6:
            row_of_six(i)
            continue
        if k % 2:
            temp(T, i, 2)
            if k > 3:
                temp(T, i, 4)
            chain(T, i, 0, lo_tail=True)
            for j in range(1, k - 1, 2):
                if j + 5 <= k - 1:
                    temp(T, i, j + 5)
                chain(T, i, j, lo_tail=False)
        else:
            # T_1.lo is added straight from r0 and the carry absorbed in r1 (a product's high
            # byte is at most 0xFE), so only T_1.hi is kept: one register, no pair for a MOVW.
            mul(i, 1)
            p.add(R[i + 1], 0, comment="T_1.lo")
            p.adc(1, zero)
            T[1] = (None, p.v("t"))
            p.mov(T[1][1], 1)
            for j in range(0, k - 1, 2):
                if j + 3 <= k - 1:
                    temp(T, i, j + 3)
                chain(T, i, j, lo_tail=False)
        R.append(T[k - 1][1])
    assert len(R) >= nres
    return R[:nres]
