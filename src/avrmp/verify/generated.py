"""A routine avrmp made, verified before a command writes it (best, rebuild): assembled in a
temporary folder and run on its target's test load, seed 1 as the benchmark runs it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import AvrmpError
from ..routine.files import write_routine
from ..routine.wrapper import Routine
from ..target.avr.parts import get_mcu
from ..techniques.arm7tdmi.registry import WORD_BITS
from .arm_checks import verify_arm
from .checks import spec_fits, verify_firmware
from .inputs import DEFAULT_TESTS
from .toolchain import build_firmware


def verify_generated(routine: Routine, tests: int = DEFAULT_TESTS) -> str:
    """One line on what was verified ("verified: ..."), or why the simulator cannot run the
    routine ("not verified: ..."); an AvrmpError naming the first failure if it fails."""
    spec = routine.spec
    if spec.target == "avr" and not get_mcu(spec.mcu).simulated:
        return f"not verified: simavr cannot simulate {spec.mcu}"
    if spec.target == "avr" and not spec_fits(spec):
        return f"not verified: one call's operands, result and stack do not fit {spec.mcu}'s SRAM"
    with tempfile.TemporaryDirectory(prefix="avrmp-verify-") as tmp:
        asm, _ = write_routine(routine, Path(tmp))
        if spec.target == "arm7tdmi":
            report = verify_arm(asm, spec.symbol, spec.op, spec.bits // WORD_BITS, spec.variant,
                                tests, seed=1, workdir=Path(tmp))
        else:
            fw = build_firmware(asm, spec.symbol, spec.mcu, Path(tmp))
            int_args = (spec.operand_bytes,) if spec.runtime_length else ()
            report = verify_firmware(fw, spec.op, spec.operand_bytes, spec.variant, tests,
                                     seed=1, int_args=int_args)
    if not report.passed:
        raise AvrmpError(f"{spec.symbol} fails verification ({report.first_failure()})")
    return f"verified: {report.inputs} inputs (seed 1)"
