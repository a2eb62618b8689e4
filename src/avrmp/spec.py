"""Spec: everything that determines a generated routine.  It validates itself on construction."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from .errors import AvrmpError
from .mcu import DEFAULT_MCU, get_mcu

OPS = ("mul", "sqr", "add", "sub")
VARIANTS = ("branched", "branchfree")


@dataclass(frozen=True)
class Spec:
    op: str
    bits: int
    algo: str
    variant: str = "branchfree"
    mcu: str = DEFAULT_MCU
    name: str = ""
    # Algorithm parameters; None means "the algorithm's default".
    levels: int | None = None
    d: int | None = None
    e: int | None = None
    looped: bool = False
    params: tuple[tuple[str, object], ...] = field(default=())

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise AvrmpError(f"unknown operation {self.op!r}: choose one of {', '.join(OPS)}")
        if not isinstance(self.bits, int) or self.bits <= 0 or self.bits % 8:
            raise AvrmpError(f"--bits {self.bits}: must be a positive multiple of 8")
        if self.variant not in VARIANTS:
            raise AvrmpError(f"unknown variant {self.variant!r}: choose one of {', '.join(VARIANTS)}")
        get_mcu(self.mcu)
        if self.name and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.name):
            raise AvrmpError(f"--name {self.name!r} is not a C identifier")
        from .algorithms import get_algorithm  # the registry imports kernels, which import Spec

        get_algorithm(self.algo).check(self)

    @property
    def operand_bytes(self) -> int:
        return self.bits // 8

    @property
    def result_bytes(self) -> int:
        return 2 * self.operand_bytes if self.op in ("mul", "sqr") else self.operand_bytes + 1

    @property
    def symbol(self) -> str:
        if self.name:
            return self.name
        if self.runtime_length:  # one routine serves every length: the name carries no size
            return f"avrmp_{self.op}_{self.algo.replace('-', '_')}"
        tag = "" if self.variant == "branchfree" else "_br"
        loop = "_looped" if self.looped else ""
        return f"avrmp_{self.op}{self.bits}_{self.algo.replace('-', '_')}{tag}{loop}"

    @property
    def runtime_length(self) -> bool:
        """The routine takes the operand length as a run-time argument (after the pointers)."""
        from .algorithms import get_algorithm

        return get_algorithm(self.algo).runtime_length

    @property
    def n_inputs(self) -> int:
        return 1 if self.op == "sqr" else 2

    def describe(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if v not in (None, (), "", False)}
        if self.runtime_length:  # the code is the same for every length: keep the text so too
            d.pop("bits")
            d["length"] = "run-time argument"
        return d
