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

from .blocks import PRODUCT_MAX, Accumulator
from .kernel import Kernel
from .program import Mem, Program
from .spec import Spec

SPL, SPH, SREG = 0x3D, 0x3E, 0x3F
X_INC, Y_INC, Z_INC, Z_DEC = Mem("X", "+"), Mem("Y", "+"), Mem("Z", "+"), Mem("Z", "-")
XP, YP, ZP = 26, 28, 30  # low registers of X, Y, Z

MAX_E = 8


def _ref(label: str) -> str:
    return label  # the printer adds the .L prefix of local labels


def add_const(p: Program, lo: int, delta: int, comment: str = "") -> None:
    """lo+1:lo += delta (a constant) with ADIW/SBIW when it fits, else SUBI/SBCI."""
    if delta == 0:
        return
    if 0 < delta <= 63 and lo in (24, 26, 28, 30):
        p.adiw(lo, delta, comment=comment)
    elif -63 <= delta < 0 and lo in (24, 26, 28, 30):
        p.sbiw(lo, -delta, comment=comment)
    else:
        neg = (-delta) & 0xFFFF
        p.subi(lo, neg & 0xFF, comment=comment)
        p.sbci(lo + 1, neg >> 8)


def _counted_loop_start(p: Program, counter: int, count: int, hint: str) -> str:
    """`ldi counter, count` and the loop label; count 1..256 (256 is loaded as 0)."""
    if not 1 <= count <= 256:
        raise AssertionError(f"loop count {count} out of range")
    p.ldi(counter, count & 0xFF, comment=f"{count} iterations")
    top = p.new_label(hint)
    p.label(top)
    return top


def _words_since(p: Program, label: str) -> int:
    from .program import Label

    for k in range(len(p.items) - 1, -1, -1):
        item = p.items[k]
        if isinstance(item, Label) and item.name == label:
            return sum(i.words for i in p.items[k + 1:] if hasattr(i, "words"))
    raise AssertionError(f"label {label} not found")


def _branch_back(p: Program, top: str) -> None:
    """Branch to `top` if Z is clear; BRNE reaches 63 words back, farther takes BREQ over RJMP."""
    if _words_since(p, top) < 60:
        p.brne(_ref(top))
    else:
        out = p.new_label("exit")
        p.breq(_ref(out))
        p.rjmp(_ref(top))
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


def product_scanning_mul_looped(spec: Spec) -> Kernel:
    """Column k sums a[i]*b[k-i]: Y walks a upwards, Z walks b downwards (pre-decrement)."""
    n = spec.operand_bytes
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
        p.brcc(_ref(odd))
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


def product_scanning_sqr_looped(spec: Spec) -> Kernel:
    """Column k = carry + 2 * sum_{i<k-i} a[i]*a[k-i] + (k even) a[k/2]^2.  Y walks up from the
    column's low index, Z down from its high index; their distance gives the cross-product count."""
    n = spec.operand_bytes
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
        p.breq(_ref(done))
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


def best_e(n: int) -> int:
    """The row height with the fewest estimated cycles: a row costs its column pairs (e MACs of 5
    cycles per column, about 28 cycles of loads, stores and moves per pair) plus its set-up."""
    def cost(e: int) -> int:
        rows = -(-n // e)
        return rows * (((n + e) // 2) * (10 * e + 28) + 2 * e + 20)

    return min(range(1, min(MAX_E, n) + 1), key=lambda e: (cost(e), -e))


def _parallel_move(p: Program, dst: list[int], src: list[int], temp: int) -> None:
    pending = {s: d for s, d in zip(src, dst) if s != d}
    while pending:
        ready = [s for s, d in pending.items() if d not in pending]
        if ready:
            s = ready[0]
            p.mov(pending.pop(s), s)
        else:
            s, d = next(iter(pending.items()))
            p.mov(temp, s)
            del pending[s]
            pending[temp] = d


def operand_caching_mul_looped(spec: Spec) -> Kernel:
    n = spec.operand_bytes
    e = min(spec.e or best_e(n), n)
    if e < 1:
        raise AssertionError("e must be positive")
    p = Program()
    # Registers: W[0..e] window (pairs W[2i], W[2i+1] aligned for MOVW), Ra[0..e-1], accumulator,
    # zero, two counters (LDI needs r16+).  r0:r1 = product and scratch.  e=8 leaves r25 free.
    pool = list(range(2, 26))
    w = pool[: e + 1]
    ra = pool[e + 1: 2 * e + 1]
    c0, c1, c2, zero = pool[2 * e + 1: 2 * e + 5]
    colcnt, rowcnt = 23, 24
    assert colcnt not in (c0, c1, c2, zero, *ra, *w) and rowcnt not in (c0, c1, c2, zero, *ra, *w)
    rows, rem = divmod(n, e)
    nrows = rows + (1 if rem else 0)
    pairs = (n + e) // 2  # ceil((n + e - 1) / 2) column pairs per row
    top_store = 2 * pairs == n + e - 1  # the top byte is left in the accumulator
    stored = 2 * pairs + (1 if top_store else 0)
    carry = _carry_bound(e)

    p.phase(f"looped operand caching {n}x{n} bytes, e={e}: {nrows} rows of a, {pairs} column "
            "pairs each")
    p.clr(zero)
    p.phase("r = 0")
    top = _counted_loop_start(p, colcnt, n, "clear")
    p.st(X_INC, zero)
    p.st(X_INC, zero)
    _loop_end(p, colcnt, top)
    add_const(p, XP, -2 * n, comment="X = r")
    p.phase(f"b copied to the stack, followed by {2 * pairs - n} zero bytes")
    if 2 * pairs > n:
        top = _counted_loop_start(p, colcnt, 2 * pairs - n, "zpad")
        p.push(zero)
        _loop_end(p, colcnt, top)
    add_const(p, ZP, n, comment="Z = b + n")
    top = _counted_loop_start(p, colcnt, n, "copyb")
    p.ld(0, Z_DEC)
    p.push(0)
    _loop_end(p, colcnt, top)
    p.in_(ZP, SPL)
    p.in_(ZP + 1, SPH)
    p.adiw(ZP, 1, comment="Z = copy of b")
    p.clr(c0)
    p.clr(c1)

    p.ldi(rowcnt, nrows, comment=f"{nrows} rows")
    body = p.new_label("row_body")
    if rem:
        p.phase(f"row 0: a[0..{rem - 1}], the top of the row registers zero")
        p.set(comment="T: the short row")
        for i in range(e):
            if i < rem:
                p.ld(ra[i], Y_INC, comment=f"a[{i}]")
            else:
                p.clr(ra[i])
        p.rjmp(_ref(body))
    p.phase(f"row loop: a[{e}p..{e}p+{e - 1}] * b added to r[{e}p..]")
    rowtop = p.new_label("row")
    p.label(rowtop)
    for i in range(e):
        p.ld(ra[i], Y_INC, comment=f"a[row+{i}]")
    p.label(body)
    for i in range(2, e + 1):
        p.clr(w[i], comment="b[<0] = 0" if i == 2 else "")

    p.phase("column pairs: t uses Ra[i]*W[i+1], t+1 uses Ra[i]*W[i]")
    pairtop = _counted_loop_start(p, colcnt, pairs, "pair")
    p.ld(w[1], Z_INC, comment="b[t]")
    p.ld(w[0], Z_INC, comment="b[t+1]")
    acc = Accumulator(p, [c0, c1, c2], zero)
    acc.bound = carry
    assert carry < 1 << 16, "the carry must fit two registers"
    acc.valid = [True, True, False]
    for col, shift in (("t", 1), ("t+1", 0)):
        for i in range(e):
            p.mul(ra[i], w[i + shift], comment=f"a[{i}]*b[{col}-{i}]" if i else f"column {col}")
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
    free = acc.regs[2]
    _parallel_move(p, [c0, c1], acc.regs[:2], free)
    p.comment("window moves by two: W[i+2] = W[i]")
    if e % 2 == 0:  # W[e] has no partner
        p.mov(w[e], w[e - 2])
        i = e - 4
    else:
        i = e - 3
    while i >= 0:
        p.movw(w[i + 2], w[i])
        i -= 2
    _loop_end(p, colcnt, pairtop)

    p.phase("end of row")
    if top_store:
        p.st(X_INC, c0, comment="top byte of the row")
        p.clr(c0)
    add_const(p, ZP, -2 * pairs, comment="Z = copy of b")
    add_const(p, XP, -(stored - e), comment="X = r + next row")
    if rem:
        skip = p.new_label("long_row")
        p.brtc(_ref(skip))
        p.clt()
        add_const(p, XP, -(e - rem), comment="the short row was shorter")
        p.label(skip)
    _loop_end(p, rowcnt, rowtop)

    p.phase("release the stack copy")
    p.in_(ZP, SPL)
    p.in_(ZP + 1, SPH)
    add_const(p, ZP, 2 * pairs)
    p.in_(0, SREG)
    p.cli()
    p.out(SPH, ZP + 1)
    p.out(SREG, 0)
    p.out(SPL, ZP)
    return Kernel(
        p, {"r": XP, "a": YP, "b": ZP},
        [f"looped operand caching e={e}; stack buffer of {2 * pairs} bytes"],
    )
