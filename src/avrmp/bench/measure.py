"""The benchmark's measurement: generate, verify and measure one Spec (measure) or a list of
them with progress (run)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..progress import progress_bar
from ..routine.files import write_routine
from ..routine.generate import generate
from ..spec import Spec
from ..target.avr.parts import simulated_mcu
from ..verify.checks import verify_firmware
from ..verify.inputs import DEFAULT_TESTS
from ..verify.toolchain import build_firmware
from .papers import RECORDS_MCU, references


@dataclass
class Row:
    op: str
    bits: int
    algo: str
    variant: str
    mcu: str
    params: str
    core_cycles: int
    abi_cycles: int
    code_bytes: int
    core_bytes: int
    stack_bytes: int
    ld: int
    st: int
    mul: int
    push_pop: int
    verified: bool
    tests: int
    failure: str
    model_cycles: int | None
    verify_seconds: float
    references: list[dict] = field(default_factory=list)


def _params(spec: Spec) -> str:
    keys = ("levels", "d", "e", "looped")
    return " ".join(f"{k}={getattr(spec, k)}" for k in keys if getattr(spec, k) not in (None, False))


def measure(spec: Spec, tests: int = DEFAULT_TESTS, workdir: Path | None = None) -> Row:
    simulated_mcu(spec.mcu)
    routine = generate(spec)
    with tempfile.TemporaryDirectory(prefix="avrmp-") as tmp:
        out = Path(workdir or tmp)
        asm, _ = write_routine(routine, out)
        fw = build_firmware(asm, spec.symbol, spec.mcu, out)
        start = time.perf_counter()
        int_args = (spec.operand_bytes,) if spec.runtime_length else ()
        report = verify_firmware(fw, spec.op, spec.operand_bytes, spec.variant, tests, seed=1,
                                 int_args=int_args)
        seconds = time.perf_counter() - start
    c = routine.classes
    refs = [  # (none for another part: the figures are RECORDS_MCU timing)
        {"source": s, "cycles": cyc, "bytes": size}
        for s, cyc, size in references(spec.op, spec.algo, spec.variant, spec.bits)
        if spec.mcu == RECORDS_MCU
    ]
    return Row(
        op=spec.op, bits=spec.bits, algo=spec.algo, variant=spec.variant, mcu=spec.mcu,
        params=_params(spec), core_cycles=report.core_cycles, abi_cycles=report.abi_cycles,
        code_bytes=routine.code_bytes, core_bytes=routine.core_bytes,
        stack_bytes=max(0, report.stack_depth - len(routine.saved)),
        ld=c.get("LD", 0), st=c.get("ST", 0), mul=c.get("MUL", 0),
        push_pop=c.get("PUSH", 0) + c.get("POP", 0),
        verified=report.passed, tests=report.inputs, failure=report.first_failure(),
        model_cycles=routine.model_cycles, verify_seconds=round(seconds, 3), references=refs,
    )


def run(specs: Sequence[Spec], tests: int = DEFAULT_TESTS, progress: bool = True) -> list[Row]:
    rows = []
    bar = progress_bar(specs, enabled=progress, desc="bench", unit="routine")
    for spec in bar:
        bar.set_postfix_str(f"{spec.op} {spec.bits} {spec.algo} {spec.variant}")
        rows.append(measure(spec, tests))
    return rows
