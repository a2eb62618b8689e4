"""The 64-bit host target: the three representations of a 255-bit integer from the seed 004
lecture (radix 2^64, radix 2^51 with signed limbs, double-precision limbs), as one table that
the C emitters (techniques/host64), the verification (verify/host64), the benchmark
(bench/host64) and the tests all read.

A representation is a list of limbs; limb i stands for limb_i * 2^(positions[i]) ("units" below
are the integer limb_i).  The double representation stores each limb already scaled, as the
double units_i * 2^(positions[i]), so that products land at the right weight with no shifts.
The top limb is never split by carrying: it keeps the rest of the value (signed where limbs
are), so a representation holds any integer within its top limb's range, not only [0, 2^255).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from ...errors import AvrmpError
from .bounds import (
    ceil_positions,
    double_max_summands,
    double_mul_summands,
    radix51_max_summands,
    radix51_mul_summands,
)

VALUE_BITS = 256  # from_bytes reads 32 bytes; to_bytes writes the value mod 2^256
PRODUCT_BITS = 512  # product_to_bytes writes 64 bytes: the product mod 2^512


@dataclass(frozen=True)
class Representation:
    name: str  # as the CLI and the API spell it
    stem: str  # default C prefix and file stem
    title: str
    c_limb: str  # the C type of one limb
    positions: tuple[int, ...]  # bit weight of each limb of a single-width value
    product_positions: tuple[int, ...]  # ... of a product (what mul writes)
    balanced: bool  # reduced limbs in [-2^(w-1), 2^(w-1)] (else [0, 2^w - 1])
    scaled: bool  # a limb holds units * 2^position (doubles), not units
    exact_units: int  # a limb is exact while |units| <= this (int64: 2^63 - 1, double: 2^53)
    max_summands: int  # operands a +/- chain may combine before carry (1: carries every time)
    mul_summands: int  # mul is exact for operands that are sums of this many reduced operands

    @property
    def limbs(self) -> int:
        return len(self.positions)

    @property
    def product_limbs(self) -> int:
        return len(self.product_positions)

    @property
    def lazy_additions(self) -> int:
        """Additions (or subtractions) of reduced operands before a carry is needed."""
        return self.max_summands - 1

    def widths(self, wide: bool = False) -> tuple[int, ...]:
        """Width of every limb but the top one (which keeps the rest)."""
        p = self.product_positions if wide else self.positions
        return tuple(b - a for a, b in pairwise(p))

    def reduced_range(self, i: int, wide: bool = False) -> tuple[int, int] | None:
        """The units a reduced limb i may hold (None for the top limb: it keeps the rest)."""
        if self.name == "radix64":
            return (0, 2**64 - 1)
        widths = self.widths(wide)
        if i >= len(widths):
            return None
        w = widths[i]
        return (-(1 << (w - 1)), 1 << (w - 1)) if self.balanced else (0, (1 << w) - 1)

    def operand_bound(self, i: int) -> int:
        """|units| of limb i of a reduced operand: a carried value in (-2^255, 2^255).  The top
        limb then holds at most 2^51 - 1 (radix 2^51, non-negative values) or 2^21 (doubles:
        the balanced limbs below it sum to less than 2^233 in magnitude)."""
        if self.name == "radix64":
            return 2**64 - 1
        rng = self.reduced_range(i)
        if rng is None:
            return 2**21 if self.scaled else (1 << (255 - self.positions[-1])) - 1
        return max(abs(rng[0]), abs(rng[1]))

    def units(self, limbs: Sequence[int | float]) -> list[int]:
        """The integer units of each limb (doubles divided by their scale; ValueError if a double
        limb is not a finite integer multiple of its scale)."""
        if not self.scaled:
            return [int(x) for x in limbs]
        out = []
        for x, p in zip(limbs, self.positions if len(limbs) == self.limbs
                        else self.product_positions):
            n = int(x)  # OverflowError / ValueError for inf / nan
            if n != x or n % (1 << p):
                raise ValueError(f"limb {x!r} is not a multiple of 2^{p}")
            out.append(n >> p)
        return out

    def limbs_of(self, units: Sequence[int]) -> list[int | float]:
        """Limb values for the given units (scaled doubles for the double representation)."""
        if not self.scaled:
            return list(units)
        p = self.positions if len(units) == self.limbs else self.product_positions
        return [float(u << q) for u, q in zip(units, p)]

    def value(self, limbs: Sequence[int | float]) -> int:
        """The integer that limbs (a single-width value or a product) stand for."""
        p = self.positions if len(limbs) == self.limbs else self.product_positions
        return sum(u << q for u, q in zip(self.units(limbs), p))

    def digits(self, value: int, wide: bool = False) -> list[int]:
        """The reduced units of value, as from_bytes computes them for a value in [0, 2^256):
        each limb but the top takes its w bits (plus the carry from below); for balanced limbs a
        digit t >= 2^(w-1) becomes t - 2^w and carries 1; the top limb keeps the rest."""
        p = self.product_positions if wide else self.positions
        widths = self.widths(wide)
        out, carry = [], 0
        for i, w in enumerate(widths):
            t = ((value >> p[i]) & ((1 << w) - 1)) + carry
            carry = (t + (1 << (w - 1))) >> w if self.balanced else 0
            out.append(t - (carry << w))
        out.append((value >> p[-1]) + carry)
        return out


def _double() -> Representation:
    positions, product = ceil_positions(12), ceil_positions(24)
    base = Representation(
        name="double", stem="avrmp_dbl",
        title="12 double limbs at bit positions ceil(21.25 i) (radix 2^21.25), balanced",
        c_limb="double", positions=positions, product_positions=product, balanced=True,
        scaled=True, exact_units=2**53, max_summands=1, mul_summands=1)
    bounds = [base.operand_bound(i) for i in range(base.limbs)]
    return replace(base, max_summands=double_max_summands(bounds, base.widths()),
                   mul_summands=double_mul_summands(bounds, positions, product))


TABLE: tuple[Representation, ...] = (
    Representation(
        name="radix64", stem="avrmp_r64",
        title="radix 2^64: 4 unsigned 64-bit limbs, carried on every operation",
        c_limb="uint64_t", positions=tuple(range(0, 256, 64)),
        product_positions=tuple(range(0, 512, 64)), balanced=False, scaled=False,
        exact_units=2**64 - 1, max_summands=1, mul_summands=1),
    Representation(
        name="radix51", stem="avrmp_r51",
        title="radix 2^51: 5 signed 64-bit limbs, additions without carries",
        c_limb="int64_t", positions=tuple(range(0, 255, 51)),
        product_positions=tuple(range(0, 510, 51)), balanced=False, scaled=False,
        exact_units=2**63 - 1, max_summands=radix51_max_summands(),
        mul_summands=radix51_mul_summands()),
    _double(),
)
REPRESENTATIONS: tuple[str, ...] = tuple(r.name for r in TABLE)


def representation(name: str) -> Representation:
    """The representation called name; AvrmpError naming the choices otherwise."""
    for r in TABLE:
        if r.name == name:
            return r
    raise AvrmpError(f"unknown host64 representation {name!r}: choose one of "
                     + ", ".join(REPRESENTATIONS))
