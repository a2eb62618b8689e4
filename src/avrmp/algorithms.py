"""The registry of algorithms: which operations each serves, at which sizes, with which parameters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import AvrmpError
from .mcu import get_mcu

if TYPE_CHECKING:
    from .kernel import Kernel
    from .spec import Spec


@dataclass(frozen=True)
class Algorithm:
    name: str
    summary: str
    builders: dict[str, Callable[[Spec], Kernel]]  # op -> kernel builder
    looped_builders: dict[str, Callable[[Spec], Kernel]] = field(default_factory=dict)
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

    def check(self, spec: Spec) -> None:
        if spec.op not in self.builders:
            ops = ", ".join(self.builders)
            raise AvrmpError(f"--algo {self.name} does not do {spec.op}: it serves {ops}")
        n = spec.operand_bytes
        if not self.min_bytes <= n <= self.max_bytes:
            raise AvrmpError(
                f"--bits {spec.bits}: {self.name} supports {8 * self.min_bytes} to "
                f"{8 * self.max_bytes} bits"
            )
        if self.even_only and n % 2:
            raise AvrmpError(f"--bits {spec.bits}: {self.name} needs an even number of bytes")
        if n % self.byte_multiple:
            raise AvrmpError(
                f"--bits {spec.bits}: {self.name} needs a multiple of {8 * self.byte_multiple} bits"
            )
        for param in ("levels", "d", "e"):
            if getattr(spec, param) is not None and param not in self.accepts:
                raise AvrmpError(f"--{param} does not apply to {self.name}")
        if spec.looped and spec.op not in self.looped_builders:
            raise AvrmpError(f"--looped: {self.name} has no looped {spec.op}")
        for param, hi in self.looped_max.items() if spec.looped else ():
            value = getattr(spec, param)
            if value is not None and not 1 <= value <= hi:
                raise AvrmpError(f"--{param} {value}: looped {self.name} takes 1..{hi} (the "
                                 "loop's window and row share the register file)")
        if spec.variant not in self.variants:
            raise AvrmpError(
                f"--variant {spec.variant}: {self.name} offers {', '.join(self.variants)}"
            )
        if self.needs_mul and spec.op in ("mul", "sqr") and not get_mcu(spec.mcu).has_mul:
            raise AvrmpError(
                f"--mcu {spec.mcu} has no hardware multiplier and {self.name} needs one"
            )

    def build(self, spec: Spec) -> Kernel:
        builders = self.looped_builders if spec.looped else self.builders
        return builders[spec.op](spec)


def _registry() -> dict[str, Algorithm]:
    from . import (
        addsub,
        hybrid,
        karatsuba_large,
        karatsuba_sqr,
        looped,
        operand_caching,
        rps,
        schoolbook,
    )

    algos = [
        Algorithm(
            "product-scanning",
            "column-wise (Comba), fully unrolled; operand bytes cached in registers",
            {"mul": schoolbook.product_scanning_mul, "sqr": schoolbook.product_scanning_sqr},
            looped_builders={
                "mul": looped.product_scanning_mul_looped,
                "sqr": looped.product_scanning_sqr_looped,
            },
            needs_mul=False,
        ),
        Algorithm(
            "operand-scanning",
            "row-wise schoolbook, fully unrolled; b cached in registers, partial result in memory",
            {"mul": schoolbook.operand_scanning_mul},
            needs_mul=False,
        ),
        Algorithm(
            "hybrid",
            "Gura et al.: product scanning over d-byte blocks, operand scanning inside each d x d "
            "block held in registers; fully unrolled",
            {"mul": hybrid.hybrid_mul},
            needs_mul=False,
            params=f"--d D: bytes per block, 1..{hybrid._hard_max_d()} "
            f"(default {hybrid.max_d()}, the most whose block stays in registers)",
            accepts=("d",),
        ),
        Algorithm(
            "operand-caching",
            "Hutter-Wenger: rows of e bytes (init block + parts 1-4), 2e operand bytes cached, "
            "partial result in memory; fully unrolled",
            {"mul": operand_caching.operand_caching_mul},
            looped_builders={"mul": looped.operand_caching_mul_looped},
            looped_max={"e": looped.MAX_E},
            needs_mul=False,
            params=f"--e E: operand bytes cached per row, 1..256 (default "
            f"{operand_caching.max_e()}, the most the registers hold; a larger e reloads)",
            accepts=("e",),
        ),
        Algorithm(
            "consecutive-operand-caching",
            "Seo-Kim: operand caching whose cache spans rows, so operands loaded at the end of "
            "one row are reused by the next; fully unrolled",
            {"mul": operand_caching.consecutive_operand_caching_mul},
            needs_mul=False,
            params="--e E: row height as for operand-caching (default: the fastest e for the size)",
            accepts=("e",),
        ),
        Algorithm(
            "rps",
            "Liu-Seo-Grossschaedl-Kim reverse product scanning: looped over 4x4-byte blocks, B read "
            "backwards, carry catchers; one routine for every length (len is a run-time argument)",
            {"mul": rps.rps_mul, "sqr": rps.rps_sqr},
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
            {"mul": karatsuba_large.karatsuba_mul_any, "sqr": karatsuba_sqr.karatsuba_sqr},
            min_bytes=2,
            params="--levels L (default: fastest for the size; above 256 bits, the number of "
            "memory levels called as subroutines over a fixed-size leaf)",
            variants=("branchfree", "branched"),
            accepts=("levels",),
        ),
        Algorithm(
            "ripple",
            "byte-serial carry/borrow chain, fully unrolled; (n+1)-byte result",
            {"add": addsub.add_sub, "sub": addsub.add_sub},
            needs_mul=False,
        ),
    ]
    return {a.name: a for a in algos}


ALGORITHMS = _registry()

# The algorithm used when the user names none.
DEFAULT_ALGO = {"mul": "product-scanning", "sqr": "product-scanning", "add": "ripple", "sub": "ripple"}


def get_algorithm(name: str) -> Algorithm:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise AvrmpError(f"unknown algorithm {name!r}: choose one of {', '.join(ALGORITHMS)}") from None

# The benchmark's default catalog: (op, algo, variant, sizes in bits).
# An optional fifth field True marks a looped routine (Spec.looped).
DEFAULT_CATALOG: list[tuple] = [
    ("mul", "product-scanning", "branchfree", (48, 64, 80, 96, 128, 160, 192, 256, 512)),
    ("mul", "operand-scanning", "branchfree", (160, 192, 256, 512)),
    ("mul", "hybrid", "branchfree", (160, 192, 256, 512)),
    ("mul", "operand-caching", "branchfree", (160, 192, 256, 512)),
    ("mul", "consecutive-operand-caching", "branchfree", (128, 160, 192, 256, 512)),
    ("sqr", "product-scanning", "branchfree", (64, 128, 160, 192, 256, 512)),
    ("mul", "rps", "branchfree", (128, 160, 192, 256, 512, 1024, 2048)),
    ("sqr", "rps", "branchfree", (128, 160, 192, 256, 512, 1024, 2048)),
    ("mul", "product-scanning", "branchfree", (64, 96, 160, 192, 256, 512, 1024, 2048), True),
    ("sqr", "product-scanning", "branchfree", (64, 96, 160, 256, 1024, 2048), True),
    ("mul", "operand-caching", "branchfree", (64, 96, 160, 192, 256, 512, 1024, 2048), True),
    ("mul", "karatsuba", "branchfree", (48, 64, 80, 96, 128, 160, 192, 224, 256)),
    ("mul", "karatsuba", "branched", (48, 64, 80, 96, 128, 160, 192, 224, 256)),
    ("sqr", "karatsuba", "branchfree", (128, 160, 192, 224, 256, 384, 512)),
    ("mul", "karatsuba", "branchfree", (512, 768, 1024, 1536, 2048)),
    ("mul", "karatsuba", "branched", (512, 1024, 2048)),
    ("sqr", "karatsuba", "branchfree", (768, 1024, 1536, 2048)),
    ("add", "ripple", "branchfree", (128, 256, 1024, 2048)),
    ("sub", "ripple", "branchfree", (128, 256, 1024, 2048)),
]
