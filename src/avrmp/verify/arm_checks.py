"""Verification of ARM7TDMI routines: Python's int is the oracle; the emulator
(verify/arm_emulator.py) reports everything else.

A routine faces the AVR's test load (inputs.test_operands: edge cases, Karatsuba sign patterns,
extreme bytes, random operands, byte runs as many as inputs.run_count allows, and pairs (x, x),
every other one passed as one buffer; then operands of extreme 32-bit words), each call from
an unkind start: result and operand buffers at random word-aligned places among random bytes,
SP at a random 8-byte-aligned height, the registers the caller does not pass and the N Z C V
flags random.  Every call is checked for the right result (little-endian 32-bit words); r4-r11
and SP restored as the AAPCS wants them; inputs unchanged; writes only to the result and the
stack the routine holds (above its SP at that moment); reads only there, in the operands and in
its own image (code, constants, data); aligned accesses; no MSR writing the mode or the
interrupt masks; and a return in the caller's state (ARM or Thumb, drawn from the seed) to a
random address.  Timing, by variant:

- "branchfree": identical instruction (PC) and data-address traces on every input of a
  placement class (placement_class: code may branch on a buffer's alignment), and identical
  cycles apart from the multiplier's early termination (m, the multiplier's steps, depends on the
  value of Rs): the cycles with every multiply at WORST_M steps must agree, which also refuses a
  conditionally executed instruction whose condition depends on the data and changes the
  cycles (a skipped MOVNE costs what a run one does);
- "consttime": that, and identical cycles;
- "none": no timing check."""

from __future__ import annotations

import random
import secrets
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AvrmpError
from ..progress import progress_bar
from ..spec import operand_count
from .arm_emulator import ArmCall, ArmEmulator, ArmMeasurement
from .arm_toolchain import build_arm
from .checks import Failure
from .inputs import ALIASED, check_tests, oracle, run_count, test_operands

ARM_VARIANTS = ("branchfree", "consttime", "none")
OPS = ("mul", "sqr")
MAX_FAILURES = 1000  # failures kept (their count goes on)
# Instructions for the byte runs: unicorn with a hook on every instruction runs some 400,000 a
# second, a tenth of the AVR host's pace, so an eighth of the AVR's budget.
ARM_RUN_BUDGET = 1_000_000
CALLEE_SAVED_NAMES = tuple(f"r{i}" for i in range(4, 12))


@dataclass
class ArmReport:
    op: str
    words: int
    variant: str
    seed: int
    inputs: int = 0
    failures: list[Failure] = field(default_factory=list)
    failure_count: int = 0  # all failures, kept or not
    core_min: int = 0
    core_max: int = 0
    abi_min: int = 0
    abi_max: int = 0
    core_typical: int = 0  # on the first random (non-edge) input (#0 if none ran)
    abi_typical: int = 0
    core_seed001_typical: int = 0  # the same input's core with every multiply at SEED001_M
    stack_depth: int = 0
    code_bytes: int = 0
    instructions: int = 0  # executed by the first call

    @property
    def passed(self) -> bool:
        return not self.failures

    def first_failure(self) -> str:
        return self.failures[0].describe() if self.failures else ""


def check_call(m: ArmMeasurement, expected: bytes, operands: tuple[bytes, ...]
               ) -> tuple[str, str] | None:
    """The first check one call fails, as (check, detail), or None."""
    if m.error:
        return "execution", m.error
    if m.result != expected:
        return "result", f"got {m.result.hex()}, expected {expected.hex()}"
    clobbered = [name for name, a, b in zip(CALLEE_SAVED_NAMES, m.regs_before, m.regs_after)
                 if a != b]
    if clobbered:
        return "abi", f"callee-saved register(s) {' '.join(clobbered)} not restored (AAPCS)"
    if m.regs_after[8] != m.regs_before[8]:
        return "abi", (f"stack pointer not restored: SP on return is entry SP"
                       f"{m.regs_after[8] - m.regs_before[8]:+d}")
    changed = [chr(65 + i) for i, (a, b) in enumerate(zip(operands, m.inputs_after)) if a != b]
    if changed:
        return "inputs", f"operand {' and '.join(changed)} modified"
    if m.stray_writes:
        return "writes", ("wrote outside the result and its own stack frame at "
                          f"{_places(m.stray_writes)}")
    if m.stray_reads:
        return "reads", ("read outside the operands, the result, its own stack frame and its "
                         "own code and data at "
                         f"{_places(m.stray_reads)}")
    return None


def _places(where: Sequence[str]) -> str:
    """The first four distinct places, and how many more."""
    where = list(dict.fromkeys(where))
    more = f" and {len(where) - 4} more" if len(where) > 4 else ""
    return f"{', '.join(where[:4])}{more}"


def check_timing(m: ArmMeasurement, first: ArmMeasurement, variant: str, ref: int = 0
                 ) -> tuple[str, str] | None:
    """The timing discipline of the variant, against input #ref (`first`, the first call of
    m's class that returned)."""
    if variant == "none" or m.error:
        return None
    if m.pc_digest != first.pc_digest:
        return "timing", f"instruction trace differs from input #{ref} (data-dependent branch)"
    if m.data_digest != first.data_digest:
        return "timing", (f"data-address trace differs from input #{ref} (data-dependent "
                          "memory access)")
    if m.fixed_m_cycles != first.fixed_m_cycles:
        return "timing", (f"cycles differ from input #{ref} beyond the multiplier's early "
                          "termination (a conditionally executed instruction depends on the "
                          "data)")
    if variant == "consttime" and (m.abi_cycles, m.core_cycles) != (first.abi_cycles,
                                                                   first.core_cycles):
        return "timing", (f"{m.abi_cycles} cycles ({m.core_cycles} core), but input #{ref} took "
                          f"{first.abi_cycles} ({first.core_cycles} core)")
    return None


def validate(op: str, words: int, variant: str, tests: int) -> None:
    if op not in OPS:
        raise AvrmpError(f"operation {op!r} on the ARM7TDMI: choose one of {', '.join(OPS)}")
    if not 1 <= words <= 1024:
        raise AvrmpError(f"{words} words: choose 1 to 1024 32-bit words")
    if variant not in ARM_VARIANTS:
        raise AvrmpError(f"variant {variant!r}: choose one of {', '.join(ARM_VARIANTS)}")
    check_tests(tests)


def verify_arm(asm: Path, symbol: str, op: str, words: int, variant: str, tests: int = 1000,
               seed: int | None = None, workdir: Path | None = None,
               int_args: tuple[int, ...] = (), progress: bool = False) -> ArmReport:
    """Build `symbol` from `asm` and run the test load on it (seed None: a fresh random seed,
    recorded in the report).  `int_args` follow the pointers in r2/r3 (a routine whose length
    is a run-time argument).  progress: the inputs run, on stderr (progress_bar)."""
    validate(op, words, variant, tests)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="avrmp-arm-") as tmp:
            return verify_arm(asm, symbol, op, words, variant, tests, seed, Path(tmp), int_args,
                              progress)
    fw = build_arm(Path(asm), symbol, Path(workdir))
    seed = secrets.randbits(32) if seed is None else seed
    report = ArmReport(op, words, variant, seed, code_bytes=fw.code_bytes)
    n_inputs = operand_count(op)
    nbytes = 4 * words
    edges = sum(1 for _ in test_operands(nbytes, n_inputs, 0, seed))
    emulator = ArmEmulator(fw, buffer_bytes=max(0x1_0000, 8 * (n_inputs + 2) * nbytes))
    probe = emulator.call(ArmCall((bytes(nbytes),) * n_inputs, 2 * nbytes, int_args),
                          max_instructions=_instruction_cap(words))
    runs = run_count(nbytes, probe.instructions, ARM_RUN_BUDGET)
    with progress_bar(test_operands(nbytes, n_inputs, tests, seed, runs, ALIASED, runs),
                      enabled=progress, desc="verify", unit="input") as load:
        run_load(report, emulator, load, edges, int_args)
    return report


def run_load(report: ArmReport, emulator: ArmEmulator, load, edges: int,
             int_args: tuple[int, ...]) -> None:
    """Call the routine on every input of `load`, recording failures and cycle figures; stop
    early if a call hangs (every later call would hang too, each as slowly)."""
    words = report.words
    rng = random.Random(report.seed)
    refs: dict[tuple, tuple[int, ArmMeasurement]] = {}  # the first call of each class
    equal_pairs = 0
    for index, ops in enumerate(load):
        operands = tuple(x.to_bytes(4 * words, "little") for x in ops)
        equal = len(operands) == 2 and operands[0] == operands[1]
        equal_pairs += equal
        shared = equal and equal_pairs % 2 == 0  # every other pair (x, x) as f(r, x, x)
        call = ArmCall(operands, 8 * words, int_args, seed=rng.getrandbits(62), shared=shared)
        m = emulator.call(call, max_instructions=_instruction_cap(words))
        key = (shared, *placement_class(m))
        if not m.error:
            refs.setdefault(key, (index, m))
        bad = check_call(m, oracle(report.op, 4 * words, operands), operands)
        if key in refs and not bad:
            bad = check_timing(m, refs[key][1], report.variant, refs[key][0])
        report.inputs += 1
        if bad:
            report.failure_count += 1
            if len(report.failures) < MAX_FAILURES:
                report.failures.append(Failure(index, *bad, operands))
        if m.error:
            if "did not return" in m.error:
                break
            continue
        record(report, m, index == edges or index == 0)
        if index == 0:
            report.instructions = m.instructions


def _instruction_cap(words: int) -> int:
    """The instructions a call may run before it counts as a hang (C at -O0 runs some 80 a
    word product)."""
    return 256 * words * words + 50_000


def placement_class(m: ArmMeasurement) -> tuple[int, ...]:
    """What of a call's layout code may branch on without branching on data: each buffer's
    address mod 8 and the entry SP mod 16 (gcc -O3 picks a doubleword copy for an 8-byte
    aligned buffer; a frame may be realigned to 16 bytes).  A call's traces and cycles are
    compared with the first call of its class and kind (a and b in one buffer or not: then the
    data-address trace names a's buffer for b's reads)."""
    return tuple(a % (16 if name == "entry SP" else 8) for name, a in m.addresses.items())


def record(report: ArmReport, m: ArmMeasurement, typical: bool) -> None:
    """Fold one returned call's cycles and stack depth into the report."""
    if report.abi_max == 0:
        report.core_min = report.core_max = m.core_cycles
        report.abi_min = report.abi_max = m.abi_cycles
    report.core_min, report.core_max = min(report.core_min, m.core_cycles), max(
        report.core_max, m.core_cycles)
    report.abi_min, report.abi_max = min(report.abi_min, m.abi_cycles), max(
        report.abi_max, m.abi_cycles)
    report.stack_depth = max(report.stack_depth, m.stack_depth)
    if typical:
        report.core_typical, report.abi_typical = m.core_cycles, m.abi_cycles
        report.core_seed001_typical = m.core_seed001_m
