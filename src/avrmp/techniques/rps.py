"""Reverse product scanning (RPS): looped multiplication and squaring, operand length given at run time.

After Liu, Seo, Grossschaedl and Kim (seed 003); the abstract fixes the idea, the details here are
ours.  One routine serves every length: the fourth argument (third for squaring) is the operand length
in bytes, a multiple of 4 from 4 to 256, passed as uint16_t in r18:r19 (r20:r21 for squaring).

Structure (m = len/4 blocks of 4 bytes; A_i, B_j are blocks):

* The outer loop scans the result in 4-byte block columns k = 0 .. 2m-2 (product scanning over
  blocks).  A 9-byte accumulator ACC[0..8] holds the carry from column k-1 in ACC[0..4] plus the
  column's block products; after the column, ACC[0..3] is stored and ACC[4..8] becomes the next carry.
* The inner loop runs over the pairs (A_i, B_{k-i}), i ascending, so B is read *backwards* with
  pre-decrement loads (the "reverse" in the name): the four bytes of B_j are loaded b3, b2, b1, b0 and
  the pointer is then already at the top of B_{j-1}; A is read forwards, one byte per row.
* Inside an iteration, row r of the 4x4 block (a_r times b3..b0) is formed in four scratch registers
  with two MOVWs (even products) and two short carry chains (odd products), then added to ACC[r..r+4].
  Its carry out lands at byte r+5.  Rows 0..2 drop that carry into three carry-catcher registers
  (bytes 5, 6, 7) that are folded into ACC once per block column; row 3's goes straight into ACC[8].
* Squaring runs the same inner loop over the pairs i < j only, adds the cross products of the
  diagonal block A_{k/2} (even k), doubles, then adds the diagonal squares.  The carry from the
  previous column enters halved (its low bit waits in the T flag), so doubling restores it exactly.

Every branch depends on the length only: for one length, the cycle count and the PC and data-address
traces are identical for all operand values.
"""

from __future__ import annotations

from ..program.program import Program
from ..target.avr.isa import Mem
from .kernel import Kernel

MIN_BYTES, MAX_BYTES = 4, 256

# Register roles (fixed: the inner loop uses all 32 registers).
ACC = [2, 3, 4, 5, 6, 7, 8, 9, 10]  # ACC[0..8], ACC[0], ACC[2], ACC[4], ACC[6] even (MOVW shifts)
KC = {5: 11, 6: 12, 7: 13, 8: 10}  # carry catchers for bytes 5, 6, 7; byte 8 is ACC[8] itself
T = [14, 15, 16, 17]  # row scratch: (T0,T1) and (T2,T3) are MOVW pairs
CNT = 18  # inner-loop counter (also takes len on entry for mul)
ZERO = 19
B = [20, 21, 22, 23]  # current block of b (or of a, for squaring), b0..b3
A_BYTE = 24  # the current byte of A
CNTSAVE = 25  # inner iterations of the current block column
X_INC, Y_DEC, Z_INC = Mem("X", "+"), Mem("Y", "-"), Mem("Z", "+")


def _long_brne(p: Program, target: str) -> None:
    """brne to a label that may be more than 63 words back."""
    skip = p.new_label("rps_x")
    p.breq(skip)
    p.rjmp(target)
    p.label(skip)


def _row(p: Program, a: int, b: list[int], r: int) -> None:
    """ACC[r..r+4] += a * (b3 b2 b1 b0); carry out to the catcher of byte r+5."""
    t0, t1, t2, t3 = T
    p.mul(a, b[0], comment=f"row {r}: a*b0")
    p.movw(t0, 0)
    p.mul(a, b[2], comment="a*b2")
    p.movw(t2, 0)
    p.mul(a, b[1], comment="a*b1")
    p.add(t1, 0)
    p.adc(t2, 1)
    p.adc(t3, ZERO)
    p.mul(a, b[3], comment="a*b3")
    p.add(t3, 0)
    p.adc(1, ZERO)
    p.add(ACC[r], t0, comment=f"ACC[{r}..{r + 4}] += row")
    p.adc(ACC[r + 1], t1)
    p.adc(ACC[r + 2], t2)
    p.adc(ACC[r + 3], t3)
    p.adc(ACC[r + 4], 1)
    p.adc(KC[r + 5], ZERO, comment=f"catch carry into byte {r + 5}")


def _inner_loop(p: Program, name: str) -> None:
    """CNT (>= 1) iterations: ACC += A_i * B_j for i ascending from X, j descending from Y."""
    p.phase("inner loop: ACC += A_i * B_j, A forwards (X+), B backwards (-Y)")
    p.label(name)
    for idx in (3, 2, 1, 0):
        p.ld(B[idx], Y_DEC, comment=f"b{idx}")
    for r in range(4):
        p.ld(A_BYTE, X_INC, comment=f"a{r}")
        _row(p, A_BYTE, B, r)
    p.dec(CNT)
    _long_brne(p, name)


def _fold_catchers(p: Program) -> None:
    p.add(ACC[5], KC[5], comment="fold the carry catchers")
    p.adc(ACC[6], KC[6])
    p.adc(ACC[7], KC[7])
    p.adc(ACC[8], ZERO)


def _clear_upper(p: Program) -> None:
    for r in (ACC[5], ACC[6], ACC[7], ACC[8], KC[5], KC[6], KC[7]):
        p.clr(r)


def _store_and_shift(p: Program) -> None:
    """Store ACC[0..3] at r (Z+), ACC[0..4] = ACC[4..8], clear the rest and the catchers."""
    for i in range(4):
        p.st(Z_INC, ACC[i], comment=f"r block byte {i}")
    p.movw(ACC[0], ACC[4], comment="carry = ACC >> 32")
    p.movw(ACC[2], ACC[6])
    p.mov(ACC[4], ACC[8])


def _rewind(p: Program, extra_x: int = 0) -> None:
    """X -= 4*CNTSAVE (+extra_x), Y += 4*CNTSAVE: back to the starts of the block column."""
    t0, t1 = T[0], T[1]
    p.mov(t0, CNTSAVE, comment="4*cnt (16 bits: cnt may be 64)")
    p.clr(t1)
    p.lsl(t0)
    p.rol(t1)
    p.lsl(t0)
    p.rol(t1)
    p.sub(26, t0, comment="X back to A_ilo")
    p.sbc(27, t1)
    p.add(28, t0, comment="Y back to the top of B_jhi")
    p.adc(29, t1)
    if extra_x:
        p.sbiw(26, extra_x)


def _count_down_stack(p: Program, done: str) -> None:
    """Decrement the phase counter kept on top of the stack; branch to `done` when it was 0."""
    t = T[2]  # SUBI needs r16..r31
    p.pop(t, comment="steps left in this phase")
    p.subi(t, 1)
    p.push(t)
    p.brcs(done)


def _len_to_blocks(p: Program, lo: int) -> None:
    """r(lo+1):r(lo) = len (4..256) -> r(lo) = len/4 (1..64)."""
    p.phase("m = len / 4 blocks")
    p.lsr(lo + 1)
    p.ror(lo)
    p.lsr(lo + 1)
    p.ror(lo)


def _prologue(p: Program, len_reg: int) -> None:
    _len_to_blocks(p, len_reg)
    p.mov(T[0], len_reg)
    p.dec(T[0], comment="m-1: steps after the first in phase 1, and all of phase 2")
    p.push(T[0])
    p.push(T[0])
    p.clr(ZERO)
    for r in ACC[:5]:
        p.clr(r)
    _clear_upper(p)


def rps_mul() -> Kernel:
    p = Program()
    p.phase("RPS multiplication, len = r19:r18 bytes (multiple of 4, 4..256)")
    _prologue(p, CNT)
    p.ldi(CNTSAVE, 1, comment="k = 0: one pair")
    p.adiw(28, 4, comment="Y = top of B_0")

    def column(tag: str) -> None:
        p.mov(CNT, CNTSAVE)
        _inner_loop(p, p.new_label(f"rps_inner_{tag}"))
        p.phase("end of block column: fold catchers, store 4 bytes, shift the carry down")
        _fold_catchers(p)
        _store_and_shift(p)
        _clear_upper(p)
        _rewind(p)

    p.phase("phase 1: k = 0 .. m-1, A from A_0, B from B_k down")
    p1, p2, end = p.new_label("rps_p1"), p.new_label("rps_p2"), p.new_label("rps_end")
    p.label(p1)
    column("p1")
    _count_down_stack(p, p2)
    p.inc(CNTSAVE)
    p.adiw(28, 4, comment="next B block on top")
    p.rjmp(p1)
    p.label(p2)
    p.pop(T[0], comment="drop the phase-1 counter")
    p.phase("phase 2: k = m .. 2m-2, A from A_(k-m+1), B from B_(m-1) down")
    p.adiw(26, 4)
    p2loop = p.new_label("rps_p2loop")
    p.dec(CNTSAVE)
    p.brne(p2loop)
    p.rjmp(end, comment="m = 1: no phase 2")
    p.label(p2loop)
    column("p2")
    p.adiw(26, 4, comment="next A block")
    p.dec(CNTSAVE)
    _long_brne(p, p2loop)
    p.label(end)
    p.pop(T[0], comment="drop the phase-2 counter")
    p.phase("top block: the last carry")
    for i in range(4):
        p.st(Z_INC, ACC[i])
    return Kernel(
        p,
        {"r": 30, "a": 26, "b": 28},
        ["run-time length: r19:r18 = len bytes, multiple of 4, 4..256"],
    )


def _diag_cross(p: Program) -> None:
    """ACC[1..8] += cross products a_p*a_q (p < q) of the diagonal block held in B[0..3]."""
    d0, d1, d2, d3 = B
    t0, t1, t2, t3 = T
    u5, u6 = KC[5], KC[6]
    p.phase("diagonal block: cross products a_p*a_q, p < q")
    p.clr(u5)
    p.clr(u6)
    p.mul(d0, d1, comment="pos 1")
    p.movw(t0, 0)
    p.mul(d0, d3, comment="pos 3")
    p.movw(t2, 0)
    p.mul(d0, d2, comment="pos 2")
    p.add(t1, 0)
    p.adc(t2, 1)
    p.adc(t3, ZERO)
    p.mul(d1, d2, comment="pos 3")
    p.add(t2, 0)
    p.adc(t3, 1)
    p.adc(u5, ZERO)
    p.mul(d1, d3, comment="pos 4")
    p.add(t3, 0)
    p.adc(u5, 1)
    p.adc(u6, ZERO)
    p.mul(d2, d3, comment="pos 5")
    p.add(u5, 0)
    p.adc(u6, 1)
    p.add(ACC[1], t0)
    p.adc(ACC[2], t1)
    p.adc(ACC[3], t2)
    p.adc(ACC[4], t3)
    p.adc(ACC[5], u5)
    p.adc(ACC[6], u6)
    p.adc(ACC[7], ZERO)
    p.adc(ACC[8], ZERO)


def _double(p: Program) -> None:
    p.phase("ACC = 2*ACC + (carry-in low bit, kept in T)")
    p.lsl(ACC[0])
    for r in ACC[1:]:
        p.rol(r)
    p.bld(ACC[0], 0)


def _diag_squares(p: Program) -> None:
    """ACC[0..8] += a_0^2 + a_1^2 2^16 + a_2^2 2^32 + a_3^2 2^48 (the diagonal block in B)."""
    d0, d1, d2, d3 = B
    p.phase("diagonal block: squares")
    p.mul(d0, d0)
    p.movw(T[0], 0)
    p.mul(d1, d1)
    p.movw(T[2], 0)
    p.mul(d2, d2)
    p.movw(d0, 0)
    p.mul(d3, d3)
    p.movw(KC[6], 0)
    sq = [T[0], T[1], T[2], T[3], d0, d1, KC[6], KC[7]]
    p.add(ACC[0], sq[0])
    for i in range(1, 8):
        p.adc(ACC[i], sq[i])
    p.adc(ACC[8], ZERO)


def _halve_carry(p: Program) -> None:
    """After the 4 bytes are stored: ACC[0..4] = (ACC[4..8]) >> 1, its low bit in T."""
    p.movw(ACC[0], ACC[4], comment="carry = ACC >> 32, entered halved")
    p.movw(ACC[2], ACC[6])
    p.mov(ACC[4], ACC[8])
    p.bst(ACC[0], 0)
    p.lsr(ACC[4])
    for r in (ACC[3], ACC[2], ACC[1], ACC[0]):
        p.ror(r)


def rps_sqr() -> Kernel:
    """Block column k: 2 * sum_{i<j, i+j=k} A_i A_j (+ the diagonal block for even k) + carry."""
    p = Program()
    p.phase("RPS squaring, len = r21:r20 bytes (multiple of 4, 4..256)")
    p.movw(CNT, 20, comment="len (r21:r20) -> r19:r18")
    p.movw(28, 26, comment="Y walks a backwards")
    _prologue(p, CNT)
    p.clt()
    p.clr(CNTSAVE)
    p.adiw(28, 4, comment="Y = top of A_0")
    names = ("inner", "even", "odd", "p1e", "p2e", "p2o", "to_p2e", "to_p2o", "end")
    lbl = {name: p.new_label(f"rps_{name}") for name in names}
    _sqr_phases(p, lbl)
    p.label(lbl["end"])
    p.pop(T[0], comment="drop the phase-2 counter")
    p.phase("top block: the last carry (undo the halving)")
    p.lsl(ACC[0])
    for r in ACC[1:4]:
        p.rol(r)
    p.bld(ACC[0], 0)
    for i in range(4):
        p.st(Z_INC, ACC[i])
    done = p.new_label("rps_done")
    p.rjmp(done)
    for parity in ("even", "odd"):
        _sqr_column(p, parity, lbl[parity], lbl["inner"])
    p.phase("inner loop over the pairs i < j (subroutine)")
    loop = p.new_label("rps_sqr_inner")
    p.label(lbl["inner"])
    _inner_loop(p, loop)
    p.ret()
    p.label(done)
    return Kernel(
        p, {"r": 30, "a": 26}, ["run-time length: r21:r20 = len bytes, multiple of 4, 4..256"]
    )


def _sqr_phases(p: Program, lbl: dict[str, str]) -> None:
    """The block columns: phase 1 (k = 0 .. m-1) and phase 2 (k = m .. 2m-2), even and odd k
    alternating, each a call of its column subroutine."""
    p.phase("phase 1: k = 0 .. m-1 (X at A_0, Y above A_k); steps alternate even/odd k")
    p.label(lbl["p1e"])
    p.rcall(lbl["even"])
    _count_down_stack(p, lbl["to_p2o"])
    p.inc(CNTSAVE, comment="even k -> odd k+1: one more pair")
    p.adiw(28, 4)
    p.rcall(lbl["odd"])
    _count_down_stack(p, lbl["to_p2e"])
    p.adiw(28, 4, comment="odd k -> even k+1: same number of pairs")
    p.rjmp(lbl["p1e"])

    p.phase("phase 2: k = m .. 2m-2 (X at A_(k-m+1), Y above A_(m-1))")
    p.label(lbl["to_p2o"])  # k = m-1 was even, k = m is odd
    p.pop(T[0])
    p.adiw(26, 4)
    _count_down_stack(p, lbl["end"])
    p.label(lbl["p2o"])
    p.rcall(lbl["odd"])
    p.adiw(26, 4, comment="odd k -> even k+1: one pair fewer")
    p.dec(CNTSAVE)
    _count_down_stack(p, lbl["end"])
    p.label(lbl["p2e"])
    p.rcall(lbl["even"])
    p.adiw(26, 4, comment="even k -> odd k+1: same number of pairs")
    _count_down_stack(p, lbl["end"])
    p.rjmp(lbl["p2o"])
    p.label(lbl["to_p2e"])  # k = m-1 was odd, k = m is even
    p.pop(T[0])
    p.adiw(26, 4)
    p.dec(CNTSAVE)
    _count_down_stack(p, lbl["end"])
    p.rjmp(lbl["p2e"])


def _sqr_column(p: Program, parity: str, name: str, inner: str) -> None:
    """One block column as a subroutine: its pairs (by the inner loop), then for even k the
    diagonal block, doubled, stored, the carry halved for the next column."""
    p.phase(f"one block column, {parity} k (subroutine)")
    p.label(name)
    skip = p.new_label("rps_nopairs")
    p.mov(CNT, CNTSAVE)
    p.tst(CNT)
    p.breq(skip)
    p.rcall(inner)
    p.label(skip)
    _fold_catchers(p)
    if parity == "even":
        for idx in range(4):
            p.ld(B[idx], X_INC, comment=f"diagonal block a{idx}")
        _diag_cross(p)
        _double(p)
        _diag_squares(p)
    else:
        _double(p)
    for i in range(4):
        p.st(Z_INC, ACC[i], comment=f"r block byte {i}")
    _halve_carry(p)
    _clear_upper(p)
    _rewind(p, extra_x=4 if parity == "even" else 0)
    p.ret()
