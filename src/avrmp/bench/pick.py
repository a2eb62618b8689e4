"""The picker (avrmp best): every algorithm and parameter that can do an operation at a size on
a part, each generated and run once in the simulator, the fastest within the flash and stack
budgets chosen."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import AvrmpError
from ..progress import progress_bar
from ..routine.files import write_routine
from ..routine.generate import generate
from ..routine.wrapper import Routine
from ..spec import Spec, result_bytes
from ..target.avr.parts import simulated_mcu
from ..techniques.hybrid import hard_max_d
from ..techniques.registry import ALGORITHMS
from ..verify.simulator import Call, run_batch
from ..verify.toolchain import build_firmware

E_VALUES = (2, 4, 6, 8, 10, 12)  # operand-caching row heights tried besides the default


@dataclass
class Candidate:
    spec: Spec
    routine: Routine
    core_cycles: int
    abi_cycles: int
    stack_bytes: int  # below the return address, saved registers included
    misses: str = ""  # the budget it does not meet ("" if it meets them all)

    @property
    def label(self) -> str:
        s = self.spec
        params = " ".join(f"{k}={getattr(s, k)}" for k in ("levels", "d", "e")
                          if getattr(s, k) is not None)
        return " ".join(x for x in (s.algo, params, "looped" * s.looped, s.variant) if x)


def requests(op: str, bits: int, mcu: str, branched: bool, sweep: bool = True) -> list[Spec]:
    """Every valid Spec for op at this size on this part: each algorithm with its default and
    (with sweep) each value of its parameter, looped where it offers a loop, branched if
    allowed."""
    specs = list(_requests(op, bits, mcu, branched, sweep))
    if not specs:
        raise AvrmpError(f"no algorithm does {op} at {bits} bits on {mcu}: see avrmp list")
    return specs


def _requests(op: str, bits: int, mcu: str, branched: bool, sweep: bool) -> Iterator[Spec]:
    for algo in ALGORITHMS.values():
        variants = [v for v in ("branchfree", "branched") if branched or v == "branchfree"]
        params: list[dict] = [{}] + (_parameters(algo.accepts) if sweep else [])
        for variant, extra, looped in itertools.product(variants, params, (False, True)):
            try:
                yield Spec(op, bits, algo.name, variant, mcu=mcu, looped=looped, **extra)
            except AvrmpError:
                continue  # not offered: another size, part, variant or parameter


def _parameters(accepts: tuple[str, ...]) -> list[dict]:
    """Each value the picker tries of each parameter an algorithm accepts."""
    values = {"levels": range(1, 8), "d": range(1, hard_max_d() + 1), "e": E_VALUES}
    return [{k: v} for k in accepts for v in values[k]]


def measure_once(spec: Spec, tmp: Path) -> Candidate | None:
    """Generate spec and run it once (zero operands); None if it cannot be generated (too large
    for the part's flash, a --levels the size does not allow...)."""
    try:
        routine = generate(spec)
    except AvrmpError:
        return None
    asm, _ = write_routine(routine, tmp)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp)
    n = spec.operand_bytes
    ints = (n,) if spec.runtime_length else ()
    operands = tuple(bytes(n) for _ in range(spec.n_inputs))
    (m,) = run_batch(fw, [Call(operands, result_bytes(spec.op, n), ints)])
    if m.error:
        return None
    return Candidate(spec, routine, m.core_cycles, m.abi_cycles, m.stack_depth)


def fastest(op: str, bits: int, mcu: str, branched: bool = False, max_flash: int | None = None,
            progress: bool = True, fixed_length: bool = False) -> Candidate:
    """The fastest routine for op at this size on this part within max_flash, over each
    algorithm's default parameters, unrolled or looped (the shortlist the library files use);
    fixed_length: none whose operand length is a run-time argument (rps)."""
    specs = [s for s in requests(op, bits, mcu, branched, sweep=False)
             if not (fixed_length and s.runtime_length)]
    if not specs:
        raise AvrmpError(f"no algorithm does {op} at {bits} bits on {mcu} without a length "
                         "argument: see avrmp list")
    best, _ = pick(specs, max_flash=max_flash, progress=progress)
    return best


def pick(specs: list[Spec], max_flash: int | None = None, max_stack: int | None = None,
         progress: bool = True) -> tuple[Candidate, list[Candidate]]:
    """The fastest of specs (core cycles, then bytes) within the budgets, and all compared."""
    op, bits, mcu = specs[0].op, specs[0].bits, specs[0].mcu
    simulated_mcu(mcu)
    found, seen = [], set()
    with tempfile.TemporaryDirectory(prefix="avrmp-best-") as tmp:
        for spec in progress_bar(specs, enabled=progress, desc="best", unit="candidate"):
            c = measure_once(spec, Path(tmp))
            code = c and c.routine.code
            if c is None or code in seen:
                continue  # a default equal to an explicit parameter: listed once
            seen.add(code)
            over = []
            if max_flash is not None and c.routine.code_bytes > max_flash:
                over.append(f"flash {c.routine.code_bytes} > {max_flash}")
            if max_stack is not None and c.stack_bytes > max_stack:
                over.append(f"stack {c.stack_bytes} > {max_stack}")
            c.misses = ", ".join(over)
            found.append(c)
    found.sort(key=lambda c: (c.core_cycles, c.routine.code_bytes))
    fitting = [c for c in found if not c.misses]
    if not found:
        raise AvrmpError(f"none of the {len(specs)} candidates for {op} {bits} bits fits "
                         f"{mcu}'s flash and SRAM: choose a smaller size or a larger part")
    if not fitting:
        budgets = ", ".join(x for x in (f"--max-flash {max_flash}" * (max_flash is not None),
                                         f"--max-stack {max_stack}" * (max_stack is not None))
                            if x)
        raise AvrmpError(f"nothing of the {len(found)} routines for {op} {bits} bits on {mcu} "
                         f"fits {budgets}: relax the budget")
    return fitting[0], found
