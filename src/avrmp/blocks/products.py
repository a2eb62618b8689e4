"""Products of byte strings in registers: product scanning (emit_product), rows whose carries
never ripple through zero (emit_product_rows), and the d x 1 row of operand scanning (mul_row)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..program.program import Program
from .accumulator import Accumulator


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
            p.copy_pair(t[i], t[i + 1], 0, 1)
        elif i + 1 == d:  # t[d] holds nothing yet: the high byte (+carry, <= 0xFF) moves there
            p.add(t[i], 0)
            p.adc(1, zero)
            p.mov(t[d], 1)
        else:
            p.add(t[i], 0)
            p.adc(t[i + 1], 1)
            p.adc(t[i + 2], zero)


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


def _rows_cost(na: int, nb: int, addend: int) -> int:
    """Non-MUL cycles of emit_product_rows with rows over a (nb products each)."""
    row = 18 if nb == 6 else 3 * nb - (nb != 2)
    first = row if addend else 2 * nb - (nb not in (2, 6))
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
    which becomes R[i+k] itself (R < 2^(8(i+k+1)) after the row, so nothing carries out, and that
    byte may take a carry from two chains).  At the low end, odd k takes D_0 and D_1 (D_0 absorbs
    T_2.lo, its carry stops in T_2.hi); even k parks T_1 too and adds T_1.lo at the head of D_2's
    chain (two products: from r0 at once).  Each row costs 3k-1 cycles besides the MULs (two
    products: 6), and no accumulator byte is ever cleared.  The first row (without an addend) is
    placed: products of even j by MOVW, the others added with their carry stopping in the next
    product's high byte; for even k but six the top product is parked too, its low byte joining
    the chain below it (4x4 bytes: 72 cycles, 76 with an addend).  Rows of six products (6x6
    bytes, the blocks of 96- and 192-bit Karatsuba) run in two groups of three with one temporary
    pair at a time instead of two or three (row_of_six): 18 cycles a row, fewer registers.  Falls
    back to emit_product where `rows_apply` says no."""
    if not rows_apply(len(a), len(b), len(addend)):
        return emit_product(p, a, b, zero, addend, zero_hi)
    return RowProduct(p, a, b, zero, addend, zero_hi).emit()


class RowProduct:
    """The row-wise schedule of emit_product_rows: R, the result so far, grows by a byte a row."""

    def __init__(self, p, a: Sequence, b: Sequence, zero, addend: Sequence, zero_hi) -> None:
        ne = len(addend)
        # Rows over the operand that makes the schedule cheaper (an addend must fit the first
        # row).
        options = [(x, y) for x, y in ((a, b), (b, a)) if ne in (0, len(y))]
        self.a, self.b = min(options, key=lambda o: (_rows_cost(len(o[0]), len(o[1]), ne),
                                                      -len(o[1]) % 2))
        self.p, self.zero, self.zero_hi, self.addend = p, zero, zero_hi, addend
        self.na, self.k = len(self.a), len(self.b)
        bound = ((1 << (8 * self.na)) - 1) * ((1 << (8 * self.k)) - 1) + ((1 << (8 * ne)) - 1)
        self.nres = (bound.bit_length() + 7) // 8
        self.spare_tops: list = []  # a top byte already cleared for the next row

    def emit(self) -> list:
        k = self.k
        if self.addend:
            self.R, first = list(self.addend), 0
        else:
            self.place_first_row()
            first = 1
        for i in range(first, self.na):
            assert len(self.R) == i + k
            if k == 6:
                self.row_of_six(i)
            elif k % 2:
                self.odd_row(i)
            else:
                self.even_row(i)
        assert len(self.R) >= self.nres
        return self.R[: self.nres]

    def mul(self, i: int, j: int) -> None:
        a, b = self.a, self.b
        self.p.mul(a[i], b[j], comment=f"{a[i].name}*{b[j].name}")

    def park(self, i: int, j: int) -> tuple:
        self.mul(i, j)
        t = (self.p.v("t"), self.p.v("t"))
        self.p.copy_pair(t[0], t[1], 0, 1)
        return t

    def temp(self, T: dict, i: int, j: int) -> tuple:
        if j not in T:
            T[j] = self.park(i, j)
        return T[j]

    def place_first_row(self) -> None:
        """Row 0 placed: even j by MOVW (disjoint pairs), odd j added, carry into the next hi
        byte."""
        p, k, zero = self.p, self.k, self.zero
        R = self.R = [p.v("c") for _ in range(k + 1)]
        for j in range(0, k, 2):
            self.mul(0, j)
            p.copy_pair(R[j], R[j + 1], 0, 1)
        top_lo = None
        # The top product parked, its low byte joining the chain below (not for rows of six,
        # whose blocks are short of registers: the extra pair cost more than it saved).
        if k % 2 == 0 and k >= 4 and k != 6:
            self.mul(0, k - 1)
            top_lo = p.v("t")
            p.copy_pair(top_lo, R[k], 0, 1)
        for j in range(1, k - (top_lo is not None), 2):
            self.mul(0, j)
            p.add(R[j], 0)
            if j + 3 == k and top_lo is not None:
                p.adc(R[j + 1], 1)
                p.adc(R[j + 2], top_lo)
                p.adc(R[k], zero)  # the row's top byte: the row's value fits below 2^(8(k+1))
            elif j + 1 < k:
                p.adc(R[j + 1], 1)
                p.adc(R[j + 2], zero)  # R[j+2] is the high byte of a_0 b_{j+1}: no overflow
            else:  # the top product: R[k] is new
                p.adc(1, zero)
                p.mov(R[k], 1)

    def odd_row(self, i: int) -> None:
        k, T = self.k, {}
        self.temp(T, i, 2)
        if k > 3:
            self.temp(T, i, 4)
        self.chain(T, i, 0, lo_tail=True)
        for j in range(1, k - 1, 2):
            if j + 5 <= k - 1:
                self.temp(T, i, j + 5)
            self.chain(T, i, j, lo_tail=False)
        self.R.append(T[k - 1][1])

    def even_row(self, i: int) -> None:
        """From four products on, T_1 is parked too and its low byte opens D_2's chain (one ADD
        there instead of ADD, ADC, MOV to add it from r0 at once: a cycle less a row).  Two
        products: T_1.lo is added straight from r0 and the carry absorbed in r1 (a product's
        high byte is at most 0xFE), so only T_1.hi is kept."""
        p, k, T = self.p, self.k, {}
        if k >= 4:
            self.temp(T, i, 1)
        else:
            self.mul(i, 1)
            p.add(self.R[i + 1], 0, comment="T_1.lo")
            p.adc(1, self.zero)
            T[1] = (None, p.v("t"))
            p.mov(T[1][1], 1)
        for j in range(0, k - 1, 2):
            if j + 3 <= k - 1:
                self.temp(T, i, j + 3)
            self.chain(T, i, j, lo_tail=False, lead=T[1][0] if j == 2 else None)
        self.R.append(T[k - 1][1])

    def chain(self, T: dict, i: int, j: int, lo_tail: bool, lead=None) -> None:
        """D_j of row i, its carry absorbed from position i+j+2 on; `lead`, a byte of weight
        i+j-1, is added first in the same chain.  In the top chain the row's top byte may take
        two carries: the row's value fits below 2^(8(i+k+1)), so it cannot overflow."""
        p, R, k, zero = self.p, self.R, self.k, self.zero
        self.mul(i, j)
        if lead is not None:
            p.add(R[i + j - 1], lead, comment="T_1.lo")
            p.adc(R[i + j], 0)
        else:
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

    def new_top(self, i: int):
        """A cleared top byte for row i (with a zero pair, this row's and the next row's by one
        MOVW)."""
        p = self.p
        if self.spare_tops:
            return self.spare_tops.pop()
        if self.zero_hi is not None and i + 1 < self.na:
            top, spare = p.v("c"), p.v("c")
            p.copy_pair(top, spare, self.zero, self.zero_hi, comment="clear two tops")
            self.spare_tops.append(spare)
            return top
        top = p.v("c")
        p.clr(top)
        return top

    def row_of_six(self, i: int) -> None:
        """Row i for k = 6 in two groups of three products with one temporary pair at a time:
        T = a_i b_2 parked, b_0 and b_1 added with their carries stopping in T.hi (the window
        R[i..i+2], T.hi cannot overflow); then T.hi and b_4 in one chain into a new top byte,
        and T' = a_i b_3 parked for b_5's chain, which ends in that top byte."""
        p, R, zero = self.p, self.R, self.zero
        t = self.park(i, 2)
        self.mul(i, 0)
        p.add(R[i], 0)
        p.adc(R[i + 1], 1)
        p.adc(R[i + 2], t[0])
        p.adc(t[1], zero)
        self.mul(i, 1)
        p.add(R[i + 1], 0)
        p.adc(R[i + 2], 1)
        p.adc(t[1], zero)
        top = self.new_top(i)
        self.mul(i, 4)
        p.add(R[i + 3], t[1])
        p.adc(R[i + 4], 0)
        p.adc(R[i + 5], 1)
        p.adc(top, zero)
        t = self.park(i, 3)
        self.mul(i, 5)
        p.add(R[i + 3], t[0])
        p.adc(R[i + 4], t[1])
        p.adc(R[i + 5], 0)
        p.adc(top, 1)
        R.append(top)
