"""The memory passes of a large Karatsuba level (straight-line, over virtual registers): the
absolute differences of the operands' halves (emit_sub_absdiff) and the combination of the level's
products with Hbar = H + L_1 fused in (level_combine)."""

from __future__ import annotations

from ...blocks.arith import emit_cond_negate, emit_ripple_mem
from ...regalloc.vprogram import V, VProgram
from ...target.avr.isa import Mem
from .frame import add_const
from .sqr_base import emit_top_deferred

ABSDIFF_KEPT = 23  # leading bytes of D held in registers between its two chains


def emit_sub_absdiff(p: VProgram, k: int, name: str) -> object:
    """X -> S_l, Y -> S_h, Z -> D (k bytes each).  D = S_l - S_h in one borrow chain (LD and ST
    leave the carry alone), then D = (D xor mask) - mask in a second one.  D's first
    ABSDIFF_KEPT bytes stay in registers between the chains: neither stored nor reloaded.  Z ends
    at D + k.  Returns the mask V (0xFF when S_l < S_h)."""
    keep = min(ABSDIFF_KEPT, k)
    p.phase(f"D = {name}_l - {name}_h ({k} bytes, the first {keep} kept in registers)")
    add_const(p, 30, keep)  # Z -> D + keep, where the stored bytes start
    kept = []
    for col in range(k):
        x, y = p.v("x"), p.v("y")
        p.ld(x, Mem("X", "+"), comment=f"{name}[{col}]")
        p.ld(y, Mem("Y", "+"), comment=f"{name}[{k + col}]")
        p.emit("sbc" if col else "sub", x, y)
        if col < keep:
            kept.append(x)
        else:
            p.st(Mem("Z", "+"), x)
    mask = p.v("mask")
    p.sbc(mask, mask, comment="mask = 0xFF when the subtraction borrowed")
    add_const(p, 30, -k)
    p.phase(f"D = (D xor mask) - mask ({k} bytes)")
    for col in range(k):
        if col < keep:
            x = kept[col]
        else:
            x = p.v("d")
            p.ld(x, Mem("Z"))
        p.eor(x, mask)
        p.emit("sbc" if col else "sub", x, mask)
        p.st(Mem("Z", "+"), x)
    return mask


def level_combine(k: int, signed: bool, w: int = 8, w_high: int | None = None,
                  m_deferred: bool = False, h_deferred: bool = False, l_deferred: bool = False,
                  defer: bool = False) -> VProgram:
    """A memory level's combination with Hbar = H + L_1 fused in (no separate Hbar pass): R holds
    L at R[0..2k) and H at R[2k..4k), the frame M (2k bytes).  Two passes over k bytes, in chunks
    of w (low half) and w_high (the high half keeps fewer bytes live, so its chunks can be wider
    and park the carries of the chains (Hbar, U's addition, M) less often; by default 16, 14
    when t takes a register), then the top bytes:

      low:  Hbar_lo = H_lo + L_1 (to R[2k..3k)),  U_lo = L_0 + Hbar_lo -/+ M_lo (to R[k..2k))
      high: U_hi = Hbar_lo + H_hi + c -/+ M_hi (to R[2k..3k)), c the carry of Hbar_lo, its own chain
      top:  R[3k..4k) = H_hi + (d, f), d = c + the chains' carries (and M's sign extension)

    Squaring always subtracts M.  signed (multiplication): the byte t before M says how (0xFF: add;
    M's chain adds (M xor ~t) + (~t & 1), an EOR per byte of M, which leaves the carry alone).
    m_deferred: M's top quarter (M_hi[k/2..k)) has not been rippled; the (d, f) that M's routine
    returned are on the stack (d pushed first).  M is then larger by that signed value at
    U_hi[k/2]: folded with c into one signed addend whose sign byte the Hbar chain, otherwise
    adding zero, carries on to the top.  h_deferred: the same for H's top quarter
    (H_hi[k/2..k), its (d, f) pushed after M's): it is short at U_hi[k/2], where it joins the
    same signed addend, and at the top bytes' byte k/2, where the ripple of (d, f) switches to
    (d_H + f, its sign byte).  l_deferred: the same for L's top quarter (L_1[k/2..k), its (d, f)
    pushed last), read only as part of Hbar = H + L_1, which the combination adds twice: at
    U_lo[k/2] (a fourth chain over U_lo's upper half, in chunks of w - 2 to leave it registers,
    whose carry and sign byte join c at U_hi[0]) and at U_hi[k/2] (with H's and M's).  defer:
    leave the top bytes to the caller (sqr_base.emit_top_deferred; not with h_deferred).

    On entry X points at M (signed: at t), Y at R+k, Z at R+2k and r25:r24 at R."""
    assert not (h_deferred and defer), "H's top quarter is folded into the top bytes"
    return LevelCombine(k, signed, w, 14 if signed else 16 if w_high is None else w_high,
                        m_deferred, h_deferred, l_deferred).emit(defer)


class LevelCombine:
    """The passes of level_combine over one VProgram; the chains' carries are parked in
    registers between chunks (ROL saves, LSR restores)."""

    def __init__(self, k: int, signed: bool, w: int, w_high: int, m_deferred: bool,
                 h_deferred: bool, l_deferred: bool) -> None:
        self.k, self.w, self.w_high = k, w, w_high
        self.m_deferred, self.h_deferred, self.l_deferred = m_deferred, h_deferred, l_deferred
        self.f_l: V | None = None  # L's deferred sign byte, through U_lo's upper half
        p = self.p = VProgram()
        self.zero = p.v("zero")
        p.clr(self.zero)
        # Hbar's, U's addition's and M's carries (and the chain adding L's deferred top).
        self.carry = {name: p.v(name) for name in ("ch", "cu", "cm") + ("cl",) * l_deferred}
        for c in self.carry.values():
            p.clr(c)
        self.t = None
        if signed:
            self.t = p.v("t")
            p.ld(self.t, Mem("X", "+"), comment="t")
            p.com(self.t, comment="t = 0xFF now means: subtract M")
        # With k + w <= 64, Y reaches both L_1 (or Hbar_lo) and H at Y+k: Z streams L_0 and X
        # stays on M.  Otherwise Z walks H and X is time-shared between L_0 and M (pointers
        # parked in r25:r24 and r1:r0).
        self.near = k + w <= 64
        self.hp, self.h_at = ("Y", k) if self.near else ("Z", 0)

    def emit(self, defer: bool) -> VProgram:
        self.low_half()
        ext = self.high_half()
        self.top(ext, defer)
        return self.p

    def chain(self, name: str, dst: list, src, first: bool, last: bool, op: str = "add") -> None:
        """dst += src (or -= with op "sub"; op "adc" adds with the carry already set; src a list,
        a function of the byte's index that loads it just before it is needed, or one register
        for every byte), the carry restored before (unless this is the chain's first chunk) and
        parked after (unless its last)."""
        p = self.p
        if not first:
            p.lsr(self.carry[name], comment=f"C = {name}")
        for q, x in enumerate(dst):
            y = src[q] if isinstance(src, list) else src(q) if callable(src) else src
            p.emit(op if first and q == 0 else {"add": "adc", "sub": "sbc", "adc": "adc"}[op],
                   x, y)
        if not last:
            p.rol(self.carry[name], comment=f"park {name}")

    def m_chain(self, u: list, j: int, first: bool) -> None:
        """U -/+= M's bytes j.. (through X)."""
        p, t = self.p, self.t
        if t is None:
            self.chain("cm", u, self.lazy("X", "M", j), first, False, "sub")
            return

        def m_byte(q: int):
            v = self.load("X", 1, "M", j + q)[0]
            p.eor(v, t)
            return v

        if first:
            p.cp(self.zero, t, comment="C = t: (M xor t) + t = -M when t = 0xFF")
        self.chain("cm", u, m_byte, first, False, "adc")

    def sign_byte(self, dst, src, comment: str) -> None:
        """dst = 0xFF if src (a small signed value) is negative, else 0."""
        self.p.mov(dst, src)
        self.p.lsl(dst)
        self.p.sbc(dst, dst, comment=comment)

    def lazy(self, ptr: str, name: str, first: int, at: int = 0):
        """A byte source for chain(): byte q loaded when the chain reaches it."""
        return lambda q: self.load(ptr, 1, name, first + q, at + q)[0]

    def load(self, ptr: str, n: int, name: str, first: int, disp: int = 0) -> list:
        p = self.p
        out = [p.v(name) for _ in range(n)]
        for q, v in enumerate(out):
            if ptr == "X":
                p.ld(v, Mem("X", "+"), comment=f"{name}[{first + q}]")
            else:
                p.ldd(v, Mem(ptr, disp=disp + q), comment=f"{name}[{first + q}]")
        return out

    def store(self, ptr: str, vals: list, name: str, first: int, at: int = 0) -> None:
        for q, v in enumerate(vals):
            self.p.std(Mem(ptr, disp=at + q), v, comment=f"{name}[{first + q}]")

    def low_half(self) -> None:
        """Hbar_lo = H_lo + L_1 (to R[2k..3k)), U_lo = L_0 + Hbar_lo -/+ M_lo (to R[k..2k))."""
        p, k, w, near, hp, h_at = self.p, self.k, self.w, self.near, self.hp, self.h_at
        if near:
            p.movw(30, 24, comment="Z -> L_0")
        else:
            p.movw(0, 26, comment="park the M pointer in r1:r0")
        p.phase(f"low half: Hbar_lo = H_lo + L_1, U_lo = L_0 + Hbar_lo -/+ M_lo ({k} bytes)")
        if self.l_deferred:
            starts = [*range(0, k // 2, w), *range(k // 2, k, w - 2)]
        else:
            starts = [*range(0, k, w)]
        for j, end in zip(starts, starts[1:] + [k]):
            n = end - j
            if near:
                u = [p.v("L_0") for _ in range(n)]
                for q, v in enumerate(u):
                    p.ld(v, Mem("Z", "+"), comment=f"L_0[{j + q}]")
            else:
                p.movw(26, 24, comment="X -> L_0")
                u = self.load("X", n, "L_0", j)
                p.movw(24, 26)
                p.movw(26, 0, comment="X -> M")
            hb = self.load(hp, n, "H", j, h_at)
            self.chain("ch", hb, self.lazy("Y", "L_1", j), j == 0, False)
            self.store(hp, hb, "Hbar_lo", j, h_at)
            self.chain("cu", u, hb, j == 0, False)
            self.m_chain(u, j, j == 0)
            if self.l_deferred and j >= k // 2:
                self.l_chain(u, j == k // 2)
            if not near:
                p.movw(0, 26)
            self.store("Y", u, "U", j)
            p.adiw(28, n)
            if not near:
                p.adiw(30, n)

    def l_chain(self, u: list, first: bool) -> None:
        """U_lo's upper half += L's deferred (d_L, f_L) (popped at the first chunk; d_L goes
        back on the stack for U_hi[k/2])."""
        p = self.p
        if first:
            p.comment("L's top quarter is (d_L, f_L) short: + (d_L, f_L) from U_lo[k/2] on")
            self.f_l, d_l = p.v("fL"), p.v("dL")
            p.pop(self.f_l)
            p.pop(d_l)
            self.chain("cl", u, lambda q: d_l if q == 0 else self.f_l, True, False)
            p.push(d_l, comment="d_L again, for U_hi[k/2]")
        else:
            self.chain("cl", u, self.f_l, False, False)

    def high_half(self) -> V:
        """U_hi = Hbar_lo + H_hi + c -/+ M_hi (to R[2k..3k)), c the carry of Hbar_lo in its own
        chain; returns what that chain adds above its last signed addend (zero, or the sign byte
        of U_lo's overflow at U_hi[0] or of the folded tops at U_hi[k/2])."""
        p, k, near = self.p, self.k, self.near
        p.phase(f"high half: U_hi = Hbar_lo + H_hi + carry(Hbar_lo) -/+ M_hi ({k} bytes)")
        # Hbar_hi = H_hi + Hbar_lo's carry is never formed: that carry ripples through U_hi in
        # its own chain and joins (d, f) for the top bytes, so H_hi stays in place.
        if not near:
            p.movw(26, 0, comment="X -> M (no longer shared); Y is at R+2k, Z at R+3k")
        self.c_hbar = p.v("c")
        p.mov(self.c_hbar, self.carry["ch"], comment="Hbar_lo's carry, for U_hi and the top bytes")
        ext = self.zero
        if self.l_deferred:
            s = self.carry["ch"]
            p.add(s, self.carry["cl"], comment="c + the carry of L's chain over U_lo")
            p.add(s, self.f_l, comment="+ f_L (-1 or 0): U_lo's overflow joins c at U_hi[0]")
        fold = self.m_deferred or self.h_deferred or self.l_deferred
        starts = sorted(set(range(0, k, self.w_high)) | ({k // 2} if fold else set()))
        for j, end in zip(starts, starts[1:] + [k]):
            n = end - j
            u = self.load("Y", n, "Hbar_lo", j)
            self.chain("cu", u, self.lazy(self.hp, "H", k + j, self.h_at), False, False)
            if fold and j == k // 2:
                ext = self.fold_deferred_tops(u, ext)
            elif j == 0 and self.l_deferred:
                ext = self.add_signed(u)
            else:
                self.chain("ch", u, ext, False, False)
            self.m_chain(u, k + j, False)
            self.store("Y", u, "U", k + j)
            p.adiw(28, n)
            if not near and j + n < k:
                p.adiw(30, n)
        return ext

    def fold_deferred_tops(self, u: list, ext: V) -> V:
        """L's, H's and M's top quarters are (d, f) short at U_hi[k/2] (popped here, L's first,
        M's last): the chain's carry and pending sign byte ext + d_L + d_H -/+ d_M join the Hbar
        chain as one signed addend; returns its sign byte, which the chain carries on."""
        p, t = self.p, self.t
        s = self.carry["ch"]
        if ext is not self.zero:
            p.add(s, ext, comment="the chain's pending sign (-1 or 0)")
        if self.l_deferred:
            d_l = p.v("dL")
            p.pop(d_l)
            p.add(s, d_l, comment="+ d_L")
        if self.h_deferred:
            d_h = self.pop_deferred("H", "+ d_H")
            p.add(s, d_h, comment="+ d_H")
        if self.m_deferred:
            d_m = self.pop_deferred("M", "-/+ d_M")
            if t is None:
                p.sub(s, d_m, comment="s -= d_M")
            else:
                emit_cond_negate(p, [d_m], t)  # -d_M when M is subtracted
                p.add(s, d_m, comment="s += -/+ d_M")
        if self.h_deferred:
            p.push(d_h, comment="d_H again, for the top bytes (no register to spare)")
        return self.add_signed(u)

    def pop_deferred(self, child: str, what: str) -> V:
        """A child's deferred (d, f) from the stack (f popped first and dropped: d's sign is
        taken again where d is added); returns d."""
        p = self.p
        p.comment(f"{child}'s top quarter is (d_{child}, f_{child}) short: {what}")
        d = p.v(f"d{child}")
        p.pop(p.v(f"f{child}"))
        p.pop(d)
        return d

    def add_signed(self, u: list) -> V:
        """u += the small signed value in the Hbar chain's register, sign-extended; the carry is
        parked there again; returns the sign byte, which the chain carries on."""
        p, s = self.p, self.carry["ch"]
        ext = p.v("sign")
        self.sign_byte(ext, s, "its sign byte")
        p.add(u[0], s)
        for x in u[1:]:
            p.adc(x, ext)
        p.clr(s)  # CLR keeps C
        p.rol(s, comment="park ch")
        return ext

    def top(self, ext: V, defer: bool) -> None:
        """R[3k..4k) = H_hi + (d, f), d = c + the chains' carries (and M's sign extension), from
        byte k/2 on with d_H joined (h_deferred), or (d, f) left to the caller."""
        p, t, carry, k = self.p, self.t, self.carry, self.k
        p.phase(f"top bytes: H_hi + (d, f) ({k} bytes; Y has reached R+3k)")
        d, f = carry["cu"], p.v("f")
        p.add(d, carry["ch"])
        p.add(d, self.c_hbar)
        if ext is self.zero and t is None:
            p.sub(d, carry["cm"], comment="d = Hbar_lo's carry + U's carries - borrow (-1..3)")
            p.sbc(f, f, comment="f = sign of d")
        else:
            if t is None:
                p.sub(d, carry["cm"], comment="- M's borrow")
            else:
                p.add(d, carry["cm"])
                p.add(d, t, comment="+ M's sign extension")
            if ext is not self.zero:
                p.add(d, ext, comment="the signed addend goes on into the top bytes")
            self.sign_byte(f, d, "f = sign of d (d is -2..4)")
        if defer:
            emit_top_deferred(p, d, f, 28, 0)
        elif not self.h_deferred:
            emit_ripple_mem(p, "Y", k, f, first_src=d, name="H_hi")
        else:  # from byte k/2 on, f's sign extension and d_H are added as one signed value
            e, g = p.v("e"), p.v("g")
            p.pop(e)
            p.add(e, f, comment="e = d_H + (f: -1 or 0)")
            self.sign_byte(g, e, "its sign byte")
            emit_ripple_mem(p, "Y", k // 2, f, first_src=d, name="H_hi")
            emit_ripple_mem(p, "Y", k - k // 2, g, first_src=e, carry_in=True, name="H_hi",
                            first=k // 2)
