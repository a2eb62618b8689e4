"""Squares of byte strings in registers, each cross product once."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .accumulator import Accumulator


def emit_square(p, a: Sequence, zero, addend: Sequence = (), zero_hi=None, w: int = 2,
                sink: Callable[[int, object], None] | None = None,
                lend_tail: bool = False) -> list:
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
    finished bytes do not hold registers).  Between a chunk's last read of r1:r0 and the next
    MUL, r1:r0 join the register pool (VProgram.lend_regs); lend_tail: they stay lent after the
    last MUL (the caller runs no MUL, or reclaims them first).  Straight-line."""
    if w < 2 or w % 2:
        raise AssertionError("emit_square needs an even chunk width")
    return Square(p, a, zero, addend, zero_hi, w, sink).emit(lend_tail)


# The doubling's carry and D's share one parking register: bit 0 (LSR restores, ROL saves) and
# bit 7 (LSL restores, ROR saves); a restore without a carry pending gives C = 0.
CARRY_SLOT = {"2S": ("lsr", "rol"), "D": ("lsl", "ror")}


class Square:
    """The state of emit_square: the cross sums' accumulator, the chains' parked carries."""

    def __init__(self, p, a: Sequence, zero, addend: Sequence, zero_hi, w: int, sink) -> None:
        self.p, self.a, self.zero, self.addend, self.w, self.sink = p, a, zero, addend, w, sink
        n = len(a)
        bound = ((1 << (8 * n)) - 1) ** 2 + ((1 << (8 * len(addend))) - 1)
        self.nres = (bound.bit_length() + 7) // 8
        fresh = (lambda: p.v("c")) if zero_hi is not None else None
        self.acc = Accumulator(p, [p.v("c"), p.v("c"), p.v("c")], zero, zero_hi, fresh)
        self.pending = {"2S": False, "D": False}
        self.shared: list = []  # the parking register, once one is needed
        self.ce = None  # the addend chain's parked carry (None: no carry pending)
        self.lent = False  # r1:r0 in the register pool (between a chunk's squares and the next MUL)

    def emit(self, lend_tail: bool) -> list:
        out: list = []
        for lo in range(0, self.nres, self.w):
            width = min(self.w, self.nres - lo)
            x = self.chunk(lo, width, last=lo + width >= self.nres)
            for v in x:
                out.append(self.mat(v))
                if self.sink is not None:
                    self.sink(len(out) - 1, out[-1])
        assert self.acc.bound == 0
        if self.lent and not lend_tail:
            self.p.reclaim(0, 1)
        return out

    def chunk(self, lo: int, width: int, last: bool) -> list:
        """Result bytes lo.. lo+width-1: 2S, + D, + E.  From D's addition (the last read of
        r1:r0) to the next chunk's first MUL, r1:r0 are lent to the register pool: the addend's
        bytes and whatever the sink does with the chunk may live there."""
        if self.lent:
            self.p.reclaim(0, 1)
            self.lent = False
        x = [self.s_byte(k) for k in range(lo, lo + width)]
        x = self.double(x, last)
        src = self.squares(lo, width)
        starts = self.pending["D"] or any(s is not None and v is not None for s, v in zip(src, x))
        if self.add_chain(x, src, self.restore("D", starts and not last)) and not last:
            self.save("D")
        self.p.lend_regs(0, 1)
        self.lent = True
        # + E (the addend), then its carry ripples until it can be folded into an a_i^2.
        addend = self.addend
        e = [addend[j] if j < len(addend) else None for j in range(lo, lo + width)]
        if self.ce is not None:
            self.p.lsr(self.ce)
        if self.add_chain(x, e, self.ce is not None) and not last:
            self.ce = self.park(self.ce, "ce")
        return x

    def s_byte(self, k: int):
        """Column k of S (None when it is provably zero)."""
        p, a, acc, n = self.p, self.a, self.acc, len(self.a)
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

    def double(self, x: list, last: bool) -> list:
        """2S: x <<= 1 with the bit shifted out of the previous chunk."""
        p, pending = self.p, self.pending
        live = pending["2S"] or any(v is not None for v in x)
        park_2s = live and (not last or pending["D"])  # D's restore needs bit 7 in place
        if self.restore("2S", park_2s):
            x = [self.mat(v) for v in x]
            for v in x:
                p.rol(v)
        elif live:
            f = next(t for t, v in enumerate(x) if v is not None)
            x[f + 1 :] = [self.mat(v) for v in x[f + 1 :]]
            p.lsl(x[f], comment="2S")
            for v in x[f + 1 :]:
                p.rol(v)
        if park_2s:
            self.save("2S")
        return x

    def squares(self, lo: int, width: int) -> list:
        """+ D: this chunk's squares, the first in r1:r0, the others parked by MOVW; the
        addend's last carry folded into the first once the addend's bytes have run out."""
        p, a = self.p, self.a
        sq = [i for i in range(lo // 2, (lo + width + 1) // 2) if i < len(a)]
        src: list = [None] * width
        for i in sq[1:]:
            p.mul(a[i], a[i], comment=f"{a[i].name}^2")
            t = (p.v("q"), p.v("q"))
            p.copy_pair(t[0], t[1], 0, 1)
            src[2 * i - lo : 2 * i - lo + 2] = t
        if sq:
            i = sq[0]
            p.mul(a[i], a[i], comment=f"{a[i].name}^2")
            if self.ce is not None and lo >= len(self.addend):
                p.add(0, self.ce, comment="fold the addend's carry into a_i^2")
                p.adc(1, self.zero)
                self.ce = None
            src[2 * i - lo : 2 * i - lo + 2] = [0, 1]
        return src[:width]

    def mat(self, x):
        if x is None:
            x = self.p.v("x")
            self.p.clr(x)
        return x

    def park(self, c, comment: str):
        """Save the carry flag in c (a new register, cleared first, if c is None)."""
        if c is None:
            c = self.p.v(comment)
            self.p.clr(c)
        self.p.rol(c)
        return c

    def restore(self, chain: str, will_park: bool) -> bool:
        """C = the chain's parked carry when one is pending or the chain will park (its save
        shifts the register back); returns whether a carry is pending."""
        if self.pending[chain] or (will_park and self.shared):
            self.p.emit(CARRY_SLOT[chain][0], self.shared[0], comment=f"C = {chain}'s parked carry")
        return self.pending[chain]

    def save(self, chain: str) -> None:
        if not self.shared:
            self.shared.append(self.p.v("cc"))
            self.p.clr(self.shared[0])
        self.p.emit(CARRY_SLOT[chain][1], self.shared[0], comment=f"park {chain}'s carry")
        self.pending[chain] = True

    def add_chain(self, x: list, src: list, carry_in: bool) -> bool:
        """x += src (None: nothing) after C = the carry (carry_in) or 0; bytes of x still
        provably zero take src by a copy.  Returns whether a carry may be out."""
        p, started = self.p, carry_in
        for t, s in enumerate(src):
            if not started and s is None:
                continue
            if not started and x[t] is None:
                x[t] = p.v("x")
                p.mov(x[t], s)
                continue
            x[t] = self.mat(x[t])
            p.emit("adc" if started else "add", x[t], self.zero if s is None else s)
            started = True
        return started
