"""The headroom of the host64 representations, derived from their limb layouts by worst-case
integer arithmetic (no floating point here: the model is exact).

Two numbers per representation:

* max summands: the largest n such that ANY n reduced operands (see `Representation.operand_bound`)
  combined limb by limb with + or -, then carried, give the exact value.  A limb holding the sum
  is at most n times the operand bound, and carrying adds the carry from the limb below before
  the limb is split, so both must stay where a limb is exact (int64: [-2^63, 2^63 - 1]; double:
  |units| <= 2^53, where every integer is representable).
* mul summands: the largest h such that mul is exact when each operand is such a sum of h
  reduced operands (its coefficients, its carries and its top limb stay exact).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT128_MAX = 2**127 - 1
DOUBLE_EXACT = 2**53  # every integer of magnitude <= 2^53 is a double


def ceil_positions(count: int, num: int = 85, den: int = 4) -> tuple[int, ...]:
    """Bit positions ceil(i * num / den) for i < count: radix 2^21.25 is ceil(85 i / 4)."""
    return tuple(-((-num * i) // den) for i in range(count))


def largest(ok: Callable[[int], bool], limit: int) -> int:
    """The largest n in [1, limit] with ok(n), for ok true up to some n and false after it
    (0 if ok(1) is false)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def int_chain_fits(limbs: Sequence[int], widths: Sequence[int], top_fits: Callable[[int], bool],
                   low_fits: Callable[[int], bool]) -> bool:
    """A sequential integer carry (c = t >> w, the limb keeps t mod 2^w, the next limb adds c) on
    the given worst-case limb values: every sum limb + carry satisfies low_fits (the top limb,
    which keeps the rest, top_fits)."""
    carry = 0
    for i, limb in enumerate(limbs):
        t = limb + carry
        if not (top_fits(t) if i == len(limbs) - 1 else low_fits(t)):
            return False
        if i < len(limbs) - 1:
            carry = t >> widths[i]
    return True


def float_chain_fits(limbs: Sequence[int], widths: Sequence[int]) -> bool:
    """The double carry (round to the nearest multiple of 2^w) on worst-case magnitudes: every
    limb + incoming carry stays within 2^53 units; a carry is at most |t| / 2^w rounded up at
    a tie, i.e. floor(|t| / 2^w + 1/2)."""
    carry = 0
    for i, limb in enumerate(limbs):
        t = abs(limb) + carry
        if t > DOUBLE_EXACT:
            return False
        if i < len(limbs) - 1:
            carry = (t + (1 << (widths[i] - 1))) >> widths[i]
    return True


def radix51_max_summands(bound: int = 2**51 - 1, limbs: int = 5) -> int:
    """n reduced radix-2^51 operands (limbs in [0, 2^51 - 1]): the sum's limbs are in
    [-n bound, n bound], and the carry chain must keep every limb + carry inside int64.
    n = 4096 exactly: 4096 (2^51 - 1) = 2^63 - 4096, its carry is 4095 and 2^63 - 4096 + 4095 =
    2^63 - 1; on the negative side the carry is -4096 and the sum reaches -2^63."""
    widths = [51] * (limbs - 1)

    def fits(t: int) -> bool:
        return INT64_MIN <= t <= INT64_MAX

    def ok(n: int) -> bool:
        return all(int_chain_fits([sign * n * bound] * limbs, widths, fits, fits)
                   for sign in (1, -1))
    return largest(ok, 2**13)


def radix51_mul_summands(bound: int = 2**51 - 1, limbs: int = 5, width: int = 51) -> int:
    """mul takes operands whose limbs are at most h bound: each limb must be an int64, each of
    the 2 limbs - 1 coefficients (a sum of up to `limbs` products) a signed 128-bit integer, and
    after carrying the coefficients into 2 limbs 51-bit limbs the top limb, which keeps
    floor(product / 2^459), an int64.  The top limb decides: h = 64, since
    64^2 (2^255 - 1)^2 < 2^522 = 2^(459 + 63) and 65^2 (2^255 - 1)^2 is not."""
    def coefficients(h: int) -> list[int]:
        a = [h * bound] * limbs
        return [sum(a[i] * a[k - i] for i in range(limbs) if 0 <= k - i < limbs)
                for k in range(2 * limbs - 1)] + [0]

    def ok(h: int) -> bool:
        if h * bound > INT64_MAX:
            return False
        c = coefficients(h)
        if max(c) > INT128_MAX:
            return False
        widths = [width] * (len(c) - 1)
        return all(int_chain_fits([sign * x for x in c], widths,
                                  lambda t: INT64_MIN <= t <= INT64_MAX,
                                  lambda t: -INT128_MAX - 1 <= t <= INT128_MAX)
                   for sign in (1, -1))
    return largest(ok, 2**12)


def double_max_summands(bounds: Sequence[int], widths: Sequence[int]) -> int:
    """n reduced double operands (|limb i| <= bounds[i] units): sums are at most n bounds[i],
    and the carry (limb + incoming carry, rounded) must stay within 2^53 units."""
    return largest(lambda n: float_chain_fits([n * b for b in bounds], widths), 2**40)


def double_mul_summands(bounds: Sequence[int], positions: Sequence[int],
                        product_positions: Sequence[int]) -> int:
    """mul of operands with |limb i| <= h bounds[i]: coefficient k sums a_i b_j, each a multiple
    of 2^(p_i + p_j) >= 2^(P_k) (P the product positions), so in units of 2^(P_k) it is at most
    h^2 sum bounds[i] bounds[j] 2^(p_i + p_j - P_k); every partial sum, and each coefficient plus
    its incoming carry, must stay within 2^53 units."""
    n = len(bounds)
    widths = [b - a for a, b in pairwise(product_positions)]

    def coefficients(h: int) -> list[int]:
        return [sum(h * h * bounds[i] * bounds[k - i]
                    << (positions[i] + positions[k - i] - product_positions[k])
                    for i in range(n) if 0 <= k - i < n)
                for k in range(2 * n - 1)] + [0]

    return largest(lambda h: float_chain_fits(coefficients(h), widths), 2**12)
