"""The ARM7TDMI algorithms the command line offers (seed 001, Table 7), and how a request
becomes a kernel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import AvrmpError
from . import hybrid, operand_caching, operand_scanning, product_scanning
from .kernel import ArmKernel

WORD_BITS = 32


@dataclass(frozen=True)
class ArmAlgorithm:
    name: str
    summary: str
    build: Callable[..., ArmKernel]  # operand words (and consttime=True) -> kernel
    min_words: int = 1
    max_words: int = 64
    even_only: bool = False
    variants: tuple[str, ...] = ("branchfree",)

    def kernel(self, words: int, variant: str) -> ArmKernel:
        return self.build(words, consttime=True) if variant == "consttime" else self.build(words)


ARM_ALGORITHMS: dict[str, ArmAlgorithm] = {a.name: a for a in (
    ArmAlgorithm(
        "product-scanning",
        "column-wise (Comba): both words of every product loaded, in LDM groups of up to 3",
        product_scanning.product_scanning_mul),
    ArmAlgorithm(
        "operand-scanning",
        "row-wise schoolbook: the partial result in memory, in LDM/STM groups of 4 with b",
        operand_scanning.operand_scanning_mul, variants=("branchfree", "consttime")),
    ArmAlgorithm(
        "operand-caching",
        "rows of a in blocks of 3 or 4 words held in registers, b loaded once per block",
        operand_caching.operand_caching_mul, variants=("branchfree", "consttime")),
    ArmAlgorithm(
        "hybrid",
        "product scanning over 2x2 blocks (d = 2) with a carry-catcher register",
        hybrid.hybrid_mul, min_words=2, even_only=True),
)}
ARM_DEFAULT = "operand-caching"  # the fastest at every size (bench/arm7tdmi.md)


def get_arm_algorithm(name: str) -> ArmAlgorithm:
    try:
        return ARM_ALGORITHMS[name]
    except KeyError:
        raise AvrmpError(f"unknown ARM7TDMI algorithm {name!r}: choose one of "
                         f"{', '.join(ARM_ALGORITHMS)}") from None
