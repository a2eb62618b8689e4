"""Verification: Python's int is the oracle; the simulator host reports everything else.

A routine faces the test load of inputs.test_operands (edge cases, Karatsuba sign patterns, then
random operands), each call from an unkind start: operand and result buffers at random places
(some straddling a 256-byte page), the caller's SP at a random height (half the time so that the
routine's stack crosses a page), SRAM outside the operands, the registers and the SREG flags
random (the I flag set on most calls, clear on some); where a and b are equal, every other call
passes one buffer for both, as f(r, x, x) does.  Every call is checked for the right result;
callee-saved registers, r1, SP and the I flag as the calling convention wants them; writes only
to the result and the routine's own stack frame, none to I/O but SP and SREG; inputs unchanged;
only the part's instructions, never a jump into the vector table; at every point where an
interrupt could be taken, SP neither half-written nor above the caller's, and nothing the
routine left below SP there read back (host.c); and, on the inputs where it is cheap (at least
one), an interrupt handler run after every instruction where one can be taken.  Timing:
branch-free code must run in identical cycles with identical instruction and data-address
traces (program-memory reads included) on every input; branched code in identical cycles.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from ..errors import AvrmpError
from ..progress import progress_bar
from ..routine.generate import stack_bound
from ..spec import Spec, data_bytes, operand_count, result_bytes
from ..target.avr.parts import MCUS, get_mcu
from .inputs import (
    ALIASED,
    DEFAULT_TESTS,
    GUARD,
    HANDLER_ROOM,
    check_tests,
    oracle,
    random_layout,
    run_count,
    test_operands,
)
from .simulator import Call, Layout, Measurement, run_batch
from .toolchain import Firmware, build_firmware

CHUNK = 2000  # calls per simulator process: memory stays bounded whatever --tests is
# Instruction boundaries per verification at which an interrupt is taken (about 2 us each):
# every input of a small routine, a few (at least one) of the largest.
INTERRUPT_BUDGET = 500_000


@dataclass
class Failure:
    index: int
    check: str
    detail: str
    operands: tuple[bytes, ...]

    def describe(self) -> str:
        ops = ", ".join(o.hex() for o in self.operands)
        return f"input #{self.index} ({ops}): {self.check}: {self.detail}"


@dataclass
class Report:
    op: str
    nbytes: int
    inputs: int
    core_cycles: int
    abi_cycles: int
    stack_depth: int
    seed: int = 0
    interrupt_inputs: int = 0  # inputs run with an interrupt after every instruction
    failures: list[Failure] = field(default_factory=list)
    core_range: tuple[int, int] = (0, 0)  # fewest and most core cycles over the load's calls
    abi_range: tuple[int, int] = (0, 0)

    def note_cycles(self, m: Measurement) -> None:
        """Fold one returned call's cycles into the ranges (they differ only without a timing
        discipline, --variant none)."""
        if self.core_range == (0, 0):
            self.core_range, self.abi_range = (m.core_cycles,) * 2, (m.abi_cycles,) * 2
        self.core_range = min(self.core_range[0], m.core_cycles), max(self.core_range[1],
                                                                       m.core_cycles)
        self.abi_range = min(self.abi_range[0], m.abi_cycles), max(self.abi_range[1],
                                                                    m.abi_cycles)

    @property
    def passed(self) -> bool:
        return not self.failures

    def first_failure(self) -> str:
        return self.failures[0].describe() if self.failures else ""


def check_one(m: Measurement, expected: bytes) -> tuple[str, str] | None:
    """The first check one call fails, as (check, detail), or None."""
    if m.error:
        return "execution", m.error
    if m.result != expected:  # (a read where it may not is often why: named with it)
        why = f" ({m.bad_read})" if m.bad_read else ""
        return "result", f"got {m.result.hex()}, expected {expected.hex()}{why}"
    if not m.callee_saved_ok:
        regs = " ".join(f"r{r}" for r in m.clobbered_regs)
        return "abi", f"callee-saved register(s) {regs} not restored"
    if not m.r1_zero:
        return "abi", "r1 is not zero on return"
    if not m.sp_ok:
        return "abi", "stack pointer not restored"
    if not m.i_flag_ok:
        return "abi", "the I flag (interrupts enabled) on return differs from the caller's"
    if m.bad_writes:
        if m.bad_writes[0] < 32:
            return "writes", (f"wrote r{m.bad_writes[0]} through its data address (the register "
                              "file is in data space on classic cores only, not on XMEGA)")
        addrs = " ".join(f"0x{a:04x}" for a in m.bad_writes[:4])
        return "writes", f"wrote outside the result and its own stack frame at {addrs}"
    if m.io_writes:
        regs = " ".join(f"0x{a - 0x20:02x}" for a in m.io_writes[:4])
        return "writes", f"wrote I/O register(s) {regs} (only SP and SREG are the routine's)"
    if m.bad_read:
        return "reads", m.bad_read
    if not m.inputs_unmodified:
        return "inputs", "an input operand was modified"
    if m.hazard:
        return "interrupts", m.hazard
    return None


TIMING_CHECKS = {"branchfree": "identical cycles and traces", "branched": "identical cycles",
                 "none": "not checked"}


def check_timing(m: Measurement, first: Measurement, variant: str,
                 ref: Measurement | None = None, where: str = "input #0") -> tuple[str, str] | None:
    """The timing discipline of the variant (variant "none": no check): cycles as input #0's
    (`first`), traces as `ref`'s, the first call of m's timing_class (`where` names it)."""
    if variant == "none":
        return None
    if m.core_cycles != first.core_cycles or m.abi_cycles != first.abi_cycles:
        return "timing", f"{m.abi_cycles} cycles, but input #0 took {first.abi_cycles}"
    ref = ref or first
    if variant == "branchfree" and m.pc_digest != ref.pc_digest:
        return "timing", (f"instruction trace differs from {where} (data-dependent branch or "
                          "instruction timing)")
    if variant == "branchfree" and m.addr_digest != ref.addr_digest:
        return "timing", (f"data-address trace differs from {where} (data-dependent memory "
                          "access)")
    return None


def timing_class(call: Call) -> str:
    """What a call's traces are compared within, beside its data: a and b in one buffer (the
    trace names each access's buffer, and b's reads fall in a's) and the caller's I flag (a
    routine may re-enable interrupts only where the caller had them: SBRC r0, 7; SEI). "" for
    the calls compared with input #0."""
    parts = []
    if call.shares_operand:
        parts.append("with a and b in one buffer")
    if not call.sreg & 0x80:
        parts.append("with interrupts disabled")
    return " and ".join(parts)


@dataclass(frozen=True)
class Load:
    """What every call of one verification shares."""

    op: str
    nbytes: int
    int_args: tuple[int, ...]
    ram: tuple[int, int]
    stack_need: int
    interrupt_inputs: int
    runs: int  # operands of byte runs (inputs.test_operands)


def calls(load: Load, tests: int, seed: int) -> Iterator[tuple[Call, bytes]]:
    """Each input's call, with its start state, and the expected result, built as they are run
    (any --tests fits in memory)."""
    n_inputs = operand_count(load.op)
    rng = random.Random(seed)
    sizes = [result_bytes(load.op, load.nbytes)] + [load.nbytes] * n_inputs
    equal_pairs = 0
    load_ops = test_operands(load.nbytes, n_inputs, tests, seed, load.runs, ALIASED)
    for idx, ops in enumerate(load_ops):
        operands = tuple(x.to_bytes(load.nbytes, "little") for x in ops)
        where = random_layout(rng, load.ram, sizes, load.stack_need)
        layout = None if where is None else Layout(*where)
        shared = False
        if layout and n_inputs == 2 and operands[0] == operands[1]:
            equal_pairs += 1
            if equal_pairs % 2 == 0:  # as f(r, x, x); not the first (input #0: the reference)
                layout = dataclasses.replace(layout, ops=layout.ops[:1] * 2)
                shared = True
        # interrupts enabled, as a caller usually has them; disabled on every 8th call, and on
        # every 4th shared one, so that each timing_class has calls to compare
        i_flag = 0 if idx % 8 == 7 or (shared and equal_pairs % 8 == 0) else 0x80
        call = Call(operands, sizes[0], load.int_args, layout=layout,
                    sreg=rng.randrange(0x80) | i_flag, seed=rng.getrandbits(62),
                    random_ram=True, isr_model=bool(i_flag) and idx < load.interrupt_inputs)
        yield call, oracle(load.op, load.nbytes, operands)


def verify_firmware(fw: Firmware, op: str, nbytes: int, variant: str = "branchfree",
                    tests: int = DEFAULT_TESTS, seed: int | None = None,
                    int_args: tuple[int, ...] = (), interrupts: bool = True,
                    progress: bool = False) -> Report:
    """Run the test load (seed None: a fresh random seed, recorded in the report).  `int_args`
    follow the pointers in every call: (nbytes,) for a routine whose operand length is a run-time
    argument (Algorithm.runtime_length).  interrupts False: no interrupt after every
    instruction.  progress: the inputs run, on stderr (progress_bar)."""
    seed = secrets.randbits(32) if seed is None else seed
    probe, operands = _probe(fw, op, nbytes, int_args)
    report = Report(op, nbytes, 1, probe.core_cycles, probe.abi_cycles, probe.stack_depth, seed)
    if probe.error and "timeout" in probe.error:  # it hangs: nothing more to run
        report.failures.append(Failure(0, "execution", probe.error, operands))
        return report
    swept = max(1, INTERRUPT_BUDGET // max(1, probe.instructions)) if interrupts else 0
    runs = run_count(nbytes, probe.instructions)
    load = Load(op, nbytes, int_args, (probe.r_addr - 16, probe.sp_top), probe.stack_depth + 4,
                swept, runs)
    report.inputs, todo = 0, calls(load, tests, seed)
    first, refs = None, {}  # input #0; the first call of each timing_class
    with progress_bar(enabled=progress, desc="verify", unit="input") as bar:
        while chunk := list(islice(todo, CHUNK)):
            results = run_batch(fw, [c for c, _ in chunk])
            for (call, expected), m in zip(chunk, results):
                first = first or m
                kind = timing_class(call)
                ref = refs.setdefault(kind, m)
                where = "input #0" if ref is first else f"the first call {kind}"
                bad = check_one(m, expected) or check_timing(m, first, variant, ref, where)
                if bad:
                    report.failures.append(Failure(report.inputs, *bad, call.operands))
                report.interrupt_inputs += call.isr_model
                report.inputs += 1
                if not m.error:
                    report.note_cycles(m)
                report.stack_depth = max(report.stack_depth, m.stack_depth)
            bar.update(len(results))
            if len(results) < len(chunk):
                break  # the routine hung: the batch stopped at that input
    if first is not None:
        report.core_cycles, report.abi_cycles = first.core_cycles, first.abi_cycles
    return report


def _probe(fw: Firmware, op: str, nbytes: int,
           int_args: tuple[int, ...]) -> tuple[Measurement, tuple[bytes, ...]]:
    """One call in the plain start state: how deep the stack goes, how many instructions a call
    runs, where SRAM lies, whether the routine returns at all."""
    operands = tuple(bytes(nbytes) for _ in range(operand_count(op)))
    (m,) = run_batch(fw, [Call(operands, result_bytes(op, nbytes), int_args)])
    return m, operands


def verify_file(asm: Path, symbol: str, op: str, nbytes: int, mcu: str, variant: str, tests: int,
                workdir: Path, len_arg: bool = False, seed: int | None = None,
                interrupts: bool = True, progress: bool = False, stack: int | None = None
                ) -> Report:
    """`len_arg`: the routine takes the operand length in bytes after the pointers (uint16_t);
    `stack`: the stack room a call needs, where it is known (sram_need)."""
    require_sram(op, nbytes, mcu, stack)
    check_tests(tests)
    fw = build_firmware(asm, symbol, mcu, workdir)
    return verify_firmware(fw, op, nbytes, variant, tests, seed,
                           int_args=(nbytes,) if len_arg else (), interrupts=interrupts,
                           progress=progress)


def require_sram(op: str, nbytes: int, mcu: str, stack: int | None = None) -> None:
    """AvrmpError unless one call fits `mcu`'s SRAM (sram_fits); the error names the part with
    the least SRAM that has room and runs the same code with the same timing."""
    if sram_fits(op, nbytes, mcu, stack):
        return
    part = get_mcu(mcu)
    roomier = [m.name for m in sorted(MCUS.values(), key=lambda m: m.sram_bytes)
               if m.simulated and m.core == part.core and m.pc_bytes == part.pc_bytes
               and m.has_mul >= part.has_mul and m.flash_bytes >= part.flash_bytes
               and sram_fits(op, nbytes, m.name, stack)]
    hint = (f"give --mcu {roomier[0]}, which runs {mcu}'s code with the same timing"
            if roomier else "choose a smaller size")
    raise AvrmpError(f"--bits {8 * nbytes}: the test load takes {sram_need(op, nbytes, stack)} bytes "
                     f"of SRAM for one call (operands and result, a guard around each, the "
                     f"stack), more than {mcu}'s {part.sram_bytes}: {hint}")


STACK_RESERVE = 96  # the runner's allowance for the stack where the routine's is not known


def guarded_buffer_bytes(op: str, nbytes: int) -> int:
    """The runner's buffers for one call: the operands and the result, with a 16-byte guard
    before each and after the last."""
    return data_bytes(op, nbytes) + GUARD * (operand_count(op) + 2)


def sram_need(op: str, nbytes: int, stack: int | None = None) -> int:
    """The SRAM the runner takes for one call: its guarded buffers and `stack` bytes (the
    routine's stack and the handler's room, stack_room; None: STACK_RESERVE)."""
    return guarded_buffer_bytes(op, nbytes) + (STACK_RESERVE if stack is None else stack)


def sram_fits(op: str, nbytes: int, mcu: str, stack: int | None = None) -> bool:
    """Whether the runner can place one call in `mcu`'s SRAM (sram_need)."""
    return sram_need(op, nbytes, stack) <= get_mcu(mcu).sram_bytes


def stack_room(spec: Spec) -> int:
    """The stack one call of a routine avrmp wrote may take in the runner: its stack_bound and
    the harness's handler below it."""
    return stack_bound(spec) + HANDLER_ROOM


def spec_fits(spec: Spec) -> bool:
    """Whether the runner can place one call of the routine in its part's SRAM, its stack
    included (the one test that verify, bench and the catalog share)."""
    return sram_fits(spec.op, spec.operand_bytes, spec.mcu, stack_room(spec))
