"""Looped (not unrolled) multiplication and squaring: code size independent of the operand length.

Loop counts depend only on n, never on operand values, so the PC and data-address traces are the
same for every input: the kernels stay constant-time.  Three kernels:

- product scanning mul: two column loops (growing, then shrinking columns); the inner loop over a
  column's products is unrolled twice and entered in the middle for odd column lengths.
- product scanning sqr: the same columns, each cross product once (doubled at the column end); the
  square a[k/2]^2 is added under a mask that is 0xFF on even columns and 0 on odd ones.
- operand caching mul (after Hutter & Wenger): rows of e bytes of a cached in registers; along a row a
  window of b bytes slides through e+1 registers, two columns per loop iteration, so that the window
  moves by two with MOVWs.  b is copied to a stack buffer padded with zeros, so the row's ragged
  ends (the paper's Parts 1 and 4) run through the same loop with zero operand bytes.
"""

from __future__ import annotations

from ..blocks.accumulator import PRODUCT_MAX, Accumulator
from ..blocks.pointers import add_to_pair, parallel_move
from ..blocks.stack import move_sp, read_sp
from ..program.items import Label
from ..program.program import Program
from ..target.avr.isa import Mem
from ..tuning.choices import Choices
from .kernel import Kernel

X_INC, Y_INC, Z_INC, Z_DEC = Mem("X", "+"), Mem("Y", "+"), Mem("Z", "+"), Mem("Z", "-")
XP, YP, ZP = 26, 28, 30  # low registers of X, Y, Z

MAX_E = 8


def _counted_loop_start(p: Program, counter: int, count: int, hint: str) -> str:
    """`ldi counter, count` and the loop label; count 1..256 (256 is loaded as 0)."""
    if not 1 <= count <= 256:
        raise AssertionError(f"loop count {count} out of range")
    p.ldi(counter, count & 0xFF, comment=f"{count} iterations")
    top = p.new_label(hint)
    p.label(top)
    return top


def _words_since(p: Program, label: str) -> int:
    for k in range(len(p.items) - 1, -1, -1):
        item = p.items[k]
        if isinstance(item, Label) and item.name == label:
            return sum(i.words for i in p.items[k + 1:] if hasattr(i, "words"))
    raise AssertionError(f"label {label} not found")


def _branch_back(p: Program, top: str) -> None:
    """Branch to `top` if Z is clear; BRNE reaches 63 words back, farther takes BREQ over RJMP."""
    if _words_since(p, top) < 60:
        p.brne(top)
    else:
        out = p.new_label("exit")
        p.breq(out)
        p.rjmp(top)
        p.label(out)


def _loop_end(p: Program, counter: int, top: str) -> None:
    p.dec(counter)
    _branch_back(p, top)


# --------------------------------------------------------------------------------------------
# product scanning, looped


def _ps_mac(p: Program, ta: int, tb: int, acc: tuple[int, int, int], zero: int) -> None:
    p.ld(ta, Y_INC)
    p.ld(tb, Z_DEC)
    p.mul(ta, tb)
    p.add(acc[0], 0)
    p.adc(acc[1], 1)
    p.adc(acc[2], zero)


def product_scanning_mul_looped(n: int) -> Kernel:
    """Column k sums a[i]*b[k-i]: Y walks a upwards, Z walks b downwards (pre-decrement)."""
    p = Program()
    moving, abase, fixed = 24, 22, 12  # pairs: moving start pointer (ADIW), a base, fixed end
    c0, c1, c2, zero = 18, 19, 20, 21
    ta, tb, cnt, lenm1, kcnt = 14, 15, 11, 17, 16
    acc = (c0, c1, c2)
    p.phase(f"looped product scanning {n}x{n} bytes: column k sums a[i]*b[k-i]")
    for r in (zero, c0, c1, c2, lenm1):
        p.clr(r)

    def column(label: str) -> None:
        # len = lenm1 + 1 products; two per iteration, entering halfway when len is odd.
        p.mov(cnt, lenm1)
        p.lsr(cnt, comment="C = (len-1) & 1")
        p.inc(cnt, comment="iterations = ceil(len/2)")
        odd, top = p.new_label(f"{label}odd"), p.new_label(f"{label}mac")
        p.brcc(odd)
        p.label(top)
        _ps_mac(p, ta, tb, acc, zero)
        p.label(odd)
        _ps_mac(p, ta, tb, acc, zero)
        _loop_end(p, cnt, top)
        p.st(X_INC, c0, comment="r[k]")
        p.mov(c0, c1)
        p.mov(c1, c2)
        p.clr(c2)

    p.phase("columns 0..n-1: a[0..k] * b[k..0]")
    top = _counted_loop_start(p, kcnt, n, "col_lo")
    p.adiw(moving, 1, comment="b + k + 1")
    p.movw(YP, abase)
    p.movw(ZP, moving)
    column("lo")
    p.inc(lenm1)
    _loop_end(p, kcnt, top)
    if n > 1:
        p.phase("columns n..2n-2: a[k-n+1..n-1] * b[n-1..k-n+1]")
        p.movw(fixed, moving, comment="b + n")
        p.movw(moving, abase)
        p.dec(lenm1)
        p.dec(lenm1)
        top = _counted_loop_start(p, kcnt, n - 1, "col_hi")
        p.adiw(moving, 1, comment="a + k - n + 1")
        p.movw(YP, moving)
        p.movw(ZP, fixed)
        column("hi")
        p.dec(lenm1)
        _loop_end(p, kcnt, top)
    p.st(X_INC, c0, comment=f"r[{2 * n - 1}]")
    return Kernel(p, {"r": XP, "a": abase, "b": moving}, ["looped: code size independent of n"])


def product_scanning_sqr_looped(n: int) -> Kernel:
    """Column k = carry + 2 * sum_{i<k-i} a[i]*a[k-i] + (k even) a[k/2]^2.  Y walks up from the
    column's low index, Z down from its high index; their distance gives the cross-product count."""
    p = Program()
    moving, abase, fixed = 24, 22, 12
    d0, d1, d2 = 17, 18, 19  # column sum (d1:d2 an aligned pair)
    c0, c1 = 20, 21  # carry into the next column (aligned pair)
    zero, ta, tb, cnt, t, mask, kcnt = 2, 14, 15, 11, 10, 3, 16
    p.phase(f"looped product-scanning squaring {n} bytes")
    p.movw(abase, moving, comment="a")
    for r in (zero, c0, c1):
        p.clr(r)
    p.clr(mask)
    p.com(mask, comment="square mask: column 0 is even")

    def column(label: str) -> None:
        for r in (d0, d1, d2):
            p.clr(r)
        p.mov(cnt, ZP)
        p.sub(cnt, YP)
        p.mov(t, ZP + 1)
        p.sbc(t, YP + 1)
        p.lsr(t)
        p.ror(cnt, comment="cross products = (Z - Y) / 2")
        done, top = p.new_label(f"{label}done"), p.new_label(f"{label}mac")
        p.breq(done)
        p.label(top)
        _ps_mac(p, ta, tb, (d0, d1, d2), zero)
        _loop_end(p, cnt, top)
        p.label(done)
        p.lsl(d0, comment="2 * cross products")
        p.rol(d1)
        p.rol(d2)
        p.ld(ta, Mem("Y"), comment="a[ceil(k/2)]")
        p.mul(ta, ta)
        p.and_(0, mask, comment="square only on even columns")
        p.and_(1, mask)
        p.add(d0, 0)
        p.adc(d1, 1)
        p.adc(d2, zero)
        p.add(d0, c0, comment="carry in")
        p.adc(d1, c1)
        p.adc(d2, zero)
        p.st(X_INC, d0, comment="r[k]")
        p.movw(c0, d1)
        p.com(mask)

    p.phase("columns 0..n-1")
    top = _counted_loop_start(p, kcnt, n, "col_lo")
    p.adiw(moving, 1, comment="a + k + 1")
    p.movw(YP, abase)
    p.movw(ZP, moving)
    column("lo")
    _loop_end(p, kcnt, top)
    if n > 1:
        p.phase("columns n..2n-2")
        p.movw(fixed, moving, comment="a + n")
        p.movw(moving, abase)
        top = _counted_loop_start(p, kcnt, n - 1, "col_hi")
        p.adiw(moving, 1, comment="a + k - n + 1")
        p.movw(YP, moving)
        p.movw(ZP, fixed)
        column("hi")
        _loop_end(p, kcnt, top)
    p.st(X_INC, c0, comment=f"r[{2 * n - 1}]")
    return Kernel(p, {"r": XP, "a": moving}, ["looped: code size independent of n"])


# --------------------------------------------------------------------------------------------
# operand caching, looped


def _carry_bound(e: int) -> int:
    """Least fixpoint of the carry between columns: column = e products + a result byte + carry."""
    b = 0
    while True:
        nb = (b + e * PRODUCT_MAX + 0xFF) >> 8
        if nb <= b:
            return b
        b = nb


def e_options(n: int) -> range:
    """The row heights a looped routine of n bytes can take."""
    return range(1, min(MAX_E, n) + 1)


def best_e(n: int) -> int:
    """The row height with the fewest estimated cycles: a row costs its column pairs (e MACs of 5
    cycles per column, about 28 cycles of loads, stores and moves per pair) plus its set-up."""
    def cost(e: int) -> int:
        rows = -(-n // e)
        return rows * (((n + e) // 2) * (10 * e + 28) + 2 * e + 20)

    return min(e_options(n), key=lambda e: (cost(e), -e))


def operand_caching_mul_looped(n: int, e: int | None, choices: Choices) -> Kernel:
    """Rows of e bytes of a (default: the row height the estimate of best_e finds fastest,
    recorded as "e")."""
    e = min(e or choices.decide("e", lambda: best_e(n), e_options(n)), n)
    return LoopedCaching(n, e).emit()


class LoopedCaching:
    """Registers: W[0..e] window (pairs W[2i], W[2i+1] aligned for MOVW), Ra[0..e-1],
    accumulator, zero, two counters (LDI needs r16+).  r0:r1 = product and scratch.  e=8 leaves
    r25 free."""

    def __init__(self, n: int, e: int) -> None:
        self.n, self.e = n, e
        pool = list(range(2, 26))
        self.w = pool[: e + 1]
        self.ra = pool[e + 1: 2 * e + 1]
        self.c0, self.c1, self.c2, self.zero = pool[2 * e + 1: 2 * e + 5]
        self.colcnt, self.rowcnt = 23, 24
        taken = (self.c0, self.c1, self.c2, self.zero, *self.ra, *self.w)
        assert self.colcnt not in taken and self.rowcnt not in taken
        rows, self.rem = divmod(n, e)
        self.nrows = rows + (1 if self.rem else 0)
        self.pairs = (n + e) // 2  # ceil((n + e - 1) / 2) column pairs per row
        self.top_store = 2 * self.pairs == n + e - 1  # the top byte is left in the accumulator
        self.carry = _carry_bound(e)
        self.p = Program()

    def emit(self) -> Kernel:
        p, n, e = self.p, self.n, self.e
        p.phase(f"looped operand caching {n}x{n} bytes, e={e}: {self.nrows} rows of a, "
                f"{self.pairs} column pairs each")
        p.clr(self.zero)
        self.clear_r()
        self.copy_b()
        p.clr(self.c0)
        p.clr(self.c1)
        self.rows()
        p.phase("release the stack copy")
        move_sp(p, ZP, 2 * self.pairs)
        return Kernel(p, {"r": XP, "a": YP, "b": ZP},
                      [f"looped operand caching e={e}; stack buffer of {2 * self.pairs} bytes"])

    def clear_r(self) -> None:
        p, n = self.p, self.n
        p.phase("r = 0")
        top = _counted_loop_start(p, self.colcnt, n, "clear")
        p.st(X_INC, self.zero)
        p.st(X_INC, self.zero)
        _loop_end(p, self.colcnt, top)
        add_to_pair(p, XP, -2 * n, comment="X = r")

    def copy_b(self) -> None:
        p, n, pairs, colcnt = self.p, self.n, self.pairs, self.colcnt
        p.phase(f"b copied to the stack, followed by {2 * pairs - n} zero bytes")
        if 2 * pairs > n:
            top = _counted_loop_start(p, colcnt, 2 * pairs - n, "zpad")
            p.push(self.zero)
            _loop_end(p, colcnt, top)
        add_to_pair(p, ZP, n, comment="Z = b + n")
        top = _counted_loop_start(p, colcnt, n, "copyb")
        p.ld(0, Z_DEC)
        p.push(0)
        _loop_end(p, colcnt, top)
        read_sp(p, ZP)
        p.adiw(ZP, 1, comment="Z = copy of b")

    def rows(self) -> None:
        """The row loop; a short first row (n not a multiple of e) enters it past the loads, its
        missing bytes of a zero and T set."""
        p, e, ra, rem = self.p, self.e, self.ra, self.rem
        p.ldi(self.rowcnt, self.nrows, comment=f"{self.nrows} rows")
        body = p.new_label("row_body")
        if rem:
            p.phase(f"row 0: a[0..{rem - 1}], the top of the row registers zero")
            p.set(comment="T: the short row")
            for i in range(e):
                if i < rem:
                    p.ld(ra[i], Y_INC, comment=f"a[{i}]")
                else:
                    p.clr(ra[i])
            p.rjmp(body)
        p.phase(f"row loop: a[{e}p..{e}p+{e - 1}] * b added to r[{e}p..]")
        rowtop = p.new_label("row")
        p.label(rowtop)
        for i in range(e):
            p.ld(ra[i], Y_INC, comment=f"a[row+{i}]")
        p.label(body)
        for i in range(2, e + 1):
            p.clr(self.w[i], comment="b[<0] = 0" if i == 2 else "")
        self.column_pairs()
        self.row_end()
        _loop_end(p, self.rowcnt, rowtop)

    def column_pairs(self) -> None:
        """Two columns an iteration: t uses Ra[i]*W[i+1], t+1 uses Ra[i]*W[i]; the window then
        moves by two."""
        p, e, w, ra, carry = self.p, self.e, self.w, self.ra, self.carry
        p.phase("column pairs: t uses Ra[i]*W[i+1], t+1 uses Ra[i]*W[i]")
        pairtop = _counted_loop_start(p, self.colcnt, self.pairs, "pair")
        p.ld(w[1], Z_INC, comment="b[t]")
        p.ld(w[0], Z_INC, comment="b[t+1]")
        acc = Accumulator(p, [self.c0, self.c1, self.c2], self.zero)
        acc.bound = carry
        assert carry < 1 << 16, "the carry must fit two registers"
        acc.valid = [True, True, False]
        for col, shift in (("t", 1), ("t+1", 0)):
            for i in range(e):
                p.mul(ra[i], w[i + shift],
                      comment=f"a[{i}]*b[{col}-{i}]" if i else f"column {col}")
                acc.add_product()
            p.ld(0, Mem("X"), comment=f"r[row+{col}]")
            acc.add(0, None, 0xFF)
            acc.ensure(0)
            p.st(X_INC, acc.regs[0])
            acc.shift_out()
        if acc.bound > carry:
            raise AssertionError("carry bound is not a loop invariant")
        acc.ensure(0)
        acc.ensure(1)
        parallel_move(p, dict(zip(acc.regs[:2], [self.c0, self.c1])), acc.regs[2])
        p.comment("window moves by two: W[i+2] = W[i]")
        if e % 2 == 0:  # W[e] has no partner
            p.mov(w[e], w[e - 2])
            i = e - 4
        else:
            i = e - 3
        while i >= 0:
            p.movw(w[i + 2], w[i])
            i -= 2
        _loop_end(p, self.colcnt, pairtop)

    def row_end(self) -> None:
        p, e, rem = self.p, self.e, self.rem
        p.phase("end of row")
        if self.top_store:
            p.st(X_INC, self.c0, comment="top byte of the row")
            p.clr(self.c0)
        stored = 2 * self.pairs + (1 if self.top_store else 0)
        add_to_pair(p, ZP, -2 * self.pairs, comment="Z = copy of b")
        add_to_pair(p, XP, -(stored - e), comment="X = r + next row")
        if rem:
            skip = p.new_label("long_row")
            p.brtc(skip)
            p.clt()
            add_to_pair(p, XP, -(e - rem), comment="the short row was shorter")
            p.label(skip)
