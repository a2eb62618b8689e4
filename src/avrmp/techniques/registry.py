"""The registry of algorithms: which operations each serves, at which sizes, with which
parameters, and how a request becomes a technique's kernel.

A builder takes the request's fields as keywords (n = operand bytes, op, variant, levels, d, e,
has_mul) and picks what its technique needs: techniques know nothing of the Spec.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import AvrmpError
from . import hybrid, looped, operand_caching, operand_scanning, product_scanning, ripple, rps
from .karatsuba import large as karatsuba
from .kernel import Kernel

Builder = Callable[..., Kernel]


@dataclass(frozen=True)
class Algorithm:
    name: str
    summary: str
    builders: dict[str, Builder]  # op -> kernel builder
    looped_builders: dict[str, Builder] = field(default_factory=dict)
    # Largest value of a parameter the looped routine takes (the loop's registers are fixed).
    looped_max: dict[str, int] = field(default_factory=dict)
    min_bytes: int = 1
    max_bytes: int = 256
    params: str = ""
    variants: tuple[str, ...] = ("branchfree",)
    needs_mul: bool = True
    even_only: bool = False
    accepts: tuple[str, ...] = ()  # which of the Spec parameters levels, d, e this algorithm takes
    # One routine for every length: the operand length in bytes is an extra C argument (uint16_t,
    # after the pointers); Spec.bits then only names the length that verify and bench measure.
    runtime_length: bool = False
    byte_multiple: int = 1  # operand bytes must be a multiple of this
    # Operand bytes above which the kernel calls subroutines whose stack frames lie above their
    # return addresses, so that the kernel depends on the return address's size (None: never).
    calls_above: int | None = None
    limits: str = ""  # what `avrmp list` adds to the sizes and variants, per operation
    # Fully unrolled and quadratic: every byte product is a MUL site of its own in the code
    # (unless the routine is --looped), so the code grows as the products (generate.flash_floor)
    unrolled_products: bool = False

    def build(self, op: str, looped: bool, **request) -> Kernel:
        """The kernel for op and `request` (the Spec's fields: n, variant, levels, d, e,
        has_mul, ret_bytes: a return address's size; and choices, the build's
        tuning.Choices)."""
        return (self.looped_builders if looped else self.builders)[op](op=op, **request)


ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm(
        "product-scanning",
        "column-wise (Comba), fully unrolled; operand bytes cached in registers",
        {"mul": lambda n, choices, **_: product_scanning.product_scanning_mul(n, choices),
         "sqr": lambda n, has_mul, choices, **_:
         product_scanning.product_scanning_sqr(n, has_mul, choices)},
        looped_builders={
            "mul": lambda n, **_: looped.product_scanning_mul_looped(n),
            "sqr": lambda n, **_: looped.product_scanning_sqr_looped(n),
        },
        needs_mul=False,
        unrolled_products=True,
    ),
    Algorithm(
        "operand-scanning",
        "row-wise schoolbook, fully unrolled; b cached in registers, partial result in memory",
        {"mul": lambda n, **_: operand_scanning.operand_scanning_mul(n)},
        needs_mul=False,
        unrolled_products=True,
    ),
    Algorithm(
        "operand-scanning-loop",
        "row-wise schoolbook in two nested loops, the smallest multiplication; one routine for "
        "every length from 1 to 255 bytes (len is a run-time argument)",
        {"mul": lambda **_: operand_scanning.operand_scanning_mul_runtime()},
        max_bytes=255,
        needs_mul=False,
        params="none; --bits only picks the length verify/bench measure (len = bits/8)",
        runtime_length=True,
    ),
    Algorithm(
        "hybrid",
        "Gura et al.: product scanning over d-byte blocks, operand scanning inside each d x d "
        "block held in registers; fully unrolled",
        {"mul": lambda n, d, **_: hybrid.hybrid_mul(n, d)},
        needs_mul=False,
        unrolled_products=True,
        params=f"--d D: bytes per block, 1..{hybrid.hard_max_d()} "
        f"(default {hybrid.max_d()}, the most whose block stays in registers)",
        accepts=("d",),
    ),
    Algorithm(
        "operand-caching",
        "Hutter-Wenger: rows of e bytes (init block + parts 1-4), 2e operand bytes cached, "
        "partial result in memory; fully unrolled",
        {"mul": lambda n, e, choices, **_: operand_caching.operand_caching_mul(n, e, choices)},
        looped_builders={"mul": lambda n, e, choices, **_:
                         looped.operand_caching_mul_looped(n, e, choices)},
        looped_max={"e": looped.MAX_E},
        needs_mul=False,
        unrolled_products=True,
        params=f"--e E: operand bytes cached per row, 1 to the operand bytes (default "
        f"{operand_caching.max_e()}, the most the registers hold; a larger e reloads)",
        accepts=("e",),
    ),
    Algorithm(
        "consecutive-operand-caching",
        "Seo-Kim: operand caching whose cache spans rows, so operands loaded at the end of "
        "one row are reused by the next; fully unrolled",
        {"mul": lambda n, e, choices, **_:
         operand_caching.consecutive_operand_caching_mul(n, e, choices)},
        needs_mul=False,
        unrolled_products=True,
        params="--e E: row height as for operand-caching (default: the fastest e for the size)",
        accepts=("e",),
    ),
    Algorithm(
        "rps",
        "Liu-Seo-Grossschaedl-Kim reverse product scanning: looped over 4x4-byte blocks, B read "
        "backwards, carry catchers; one routine for every length (len is a run-time argument)",
        {"mul": lambda **_: rps.rps_mul(), "sqr": lambda **_: rps.rps_sqr()},
        min_bytes=rps.MIN_BYTES,
        max_bytes=rps.MAX_BYTES,
        params="none; --bits only picks the length verify/bench measure (len = bits/8, "
        "multiple of 4, 32..2048 bits)",
        runtime_length=True,
        byte_multiple=4,
    ),
    Algorithm(
        "karatsuba",
        "subtractive refined Karatsuba: memory levels over a 1-level base in registers",
        {"mul": lambda n, variant, levels, choices, ret_bytes, **_:
         karatsuba.karatsuba_mul_any(n, variant, choices, levels, ret_bytes),
         "sqr": lambda n, variant, levels, choices, ret_bytes, **_:
         karatsuba.karatsuba_sqr_any(n, variant, choices, levels, ret_bytes)},
        min_bytes=2,
        params="--levels L (default: fastest for the size; above 256 bits, the number of "
        "memory levels called as subroutines over a fixed-size leaf)",
        variants=("branchfree", "branched"),
        accepts=("levels",),
        calls_above=karatsuba.LEAF_MAX,
        limits=karatsuba.sqr_limits(),
    ),
    Algorithm(
        "ripple",
        "byte-serial carry/borrow chain, fully unrolled; (n+1)-byte result",
        {"add": lambda n, op, **_: ripple.add_sub(n, op),
         "sub": lambda n, op, **_: ripple.add_sub(n, op)},
        needs_mul=False,
    ),
)}

# The algorithm used when the user names none.
DEFAULT_ALGO = {"mul": "product-scanning", "sqr": "product-scanning", "add": "ripple", "sub": "ripple"}


def get_algorithm(name: str) -> Algorithm:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise AvrmpError(f"unknown algorithm {name!r}: choose one of {', '.join(ALGORITHMS)}") from None

