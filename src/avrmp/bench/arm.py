"""The ARM7TDMI benchmark: every technique at the sizes of seed 001 Table 7 (and 512, 1024
bits), generated, verified in the emulator and timed by the ARM7TDMI model on the executed
trace, beside the paper's figures."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import AvrmpError
from ..progress import progress_bar
from ..routine.files import write_routine
from ..routine.generate import generate
from ..spec import Spec
from ..target.arm7tdmi.isa import SEED001_M, WORST_M
from ..techniques.arm7tdmi.registry import ARM_ALGORITHMS
from ..verify.arm_checks import verify_arm
from .papers import ARM7TDMI_TABLE7

ARM_SIZES = (160, 192, 256, 512, 1024)
README_MARKERS = ("<!-- bench-arm:begin -->", "<!-- bench-arm:end -->")


@dataclass(frozen=True)
class ArmRow:
    algo: str
    variant: str
    bits: int
    verified: bool
    core_cycles: int  # on a random input (the multiplier takes its most steps on nearly all)
    core_min: int  # over the whole test load (zero operands stop the multiplier early)
    core_max: int
    abi_cycles: int
    core_seed001_m: int  # core_cycles' input with every multiply as seed 001 counts it
    code_bytes: int
    stack_bytes: int
    model_cycles: int  # the static count, every multiply at m = 4
    paper: int | None
    failure: str = ""


def arm_catalog(bits: Sequence[int] | None = None, algos: Sequence[str] | None = None
                ) -> list[Spec]:
    """The ARM7TDMI routines of the selection (every size and algorithm by default); an
    AvrmpError if it names none that exists."""
    specs = []
    for b, a in itertools.product(bits or ARM_SIZES, algos or ARM_ALGORITHMS):
        for v in ARM_ALGORITHMS[a].variants:
            with contextlib.suppress(AvrmpError):  # a size this algorithm does not take
                specs.append(Spec("mul", b, a, v, target="arm7tdmi"))
    if not specs:
        raise AvrmpError("the selection matches no ARM7TDMI routine (see avrmp list: sizes "
                         "and even word counts per algorithm)")
    return specs


def measure_arm(specs: Sequence[Spec], tests: int, progress: bool = False) -> list[ArmRow]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="avrmp-arm-bench-") as tmp:
        for spec in progress_bar(specs, enabled=progress, desc="arm7tdmi", unit="routine"):
            routine = generate(spec)
            asm, _ = write_routine(routine, Path(tmp))
            r = verify_arm(asm, spec.symbol, "mul", spec.words, spec.variant, tests, seed=1,
                           workdir=Path(tmp))
            rows.append(ArmRow(spec.algo, spec.variant, spec.bits, r.passed, r.core_typical,
                               r.core_min, r.core_max, r.abi_typical, r.core_seed001_typical,
                               r.code_bytes, r.stack_depth,
                               routine.model_cycles or 0,
                               ARM7TDMI_TABLE7.get(spec.algo, {}).get(spec.bits),
                               "" if r.passed else r.first_failure()))
    return rows


def arm_markdown(rows: Sequence[ArmRow]) -> str:
    lines = [
        ("ARM7TDMI, ARM state: core cycles from the timing model (ARM DDI 0210C, zero wait "
         "states) applied to the executed trace in the emulator; on a random input, with the "
         "range over the whole test load (zero words end the multiplier early; a consttime "
         "routine has one figure). Seed 001 Table 7 beside them (its figures are not constant "
         "time: beside a consttime row they show the price of it), and the same trace timed "
         "with every multiply as the paper counts it (UMULL in 4 clocks, UMLAL in 5: the "
         f"manual's m = {SEED001_M} instead of {WORST_M}; see docs/arm7tdmi.md)."),
        "",
        ("| bits | technique | variant | core cycles | range | ABI cycles | bytes | stack "
         "| seed 001 T7 | ours / T7 | at T7's UMULL | its ratio | verified |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = list(ARM_ALGORITHMS)
    for r in sorted(rows, key=lambda r: (r.bits, order.index(r.algo), r.variant)):
        ratio = f"{r.core_cycles / r.paper:.3f}" if r.paper else "–"
        paper_ratio = f"{r.core_seed001_m / r.paper:.3f}" if r.paper else "–"
        span = (str(r.core_min) if r.core_min == r.core_max
                else f"{r.core_min}–{r.core_max}")
        lines.append(
            f"| {r.bits} | {r.algo} | {r.variant} | {r.core_cycles} | {span} | "
            f"{r.abi_cycles} | {r.code_bytes} | {r.stack_bytes} | {r.paper or '–'} | {ratio} "
            f"| {r.core_seed001_m} | {paper_ratio} "
            f"| {'yes' if r.verified else 'NO: ' + r.failure} |")
    return "\n".join(lines) + "\n"
