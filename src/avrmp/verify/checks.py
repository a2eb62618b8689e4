"""Verification: Python's int is the oracle; the runner reports everything else.

Every routine faces the papers' load (1000 random operand pairs) plus edge cases: all-zero, all-0xFF,
single bits, carry chains, and operands built so that |A_l - A_h| and |B_l - B_h| take every sign
(including zero) at every level of a Karatsuba recursion.  Branch-free code must run in identical
cycles with identical PC and data-address traces on every input; branched code in identical cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..target.avr.parts import get_mcu
from .inputs import oracle, result_bytes, test_operands
from .simulator import Call, Measurement, run_batch
from .toolchain import Firmware, build_firmware

DEFAULT_TESTS = 1000


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
    failures: list[Failure] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def first_failure(self) -> str:
        return self.failures[0].describe() if self.failures else ""


def check_one(m: Measurement, expected: bytes) -> tuple[str, str] | None:
    if m.error:
        return "execution", m.error
    if m.result != expected:
        return "result", f"got {m.result.hex()}, expected {expected.hex()}"
    if not m.callee_saved_ok:
        regs = " ".join(f"r{r}" for r in m.clobbered_regs)
        return "abi", f"callee-saved register(s) {regs} not restored"
    if not m.r1_zero:
        return "abi", "r1 is not zero on return"
    if not m.sp_ok:
        return "abi", "stack pointer not restored"
    if m.bad_writes:
        addrs = " ".join(f"0x{a:04x}" for a in m.bad_writes[:4])
        return "writes", f"wrote outside the result and its own stack frame at {addrs}"
    if not m.inputs_unmodified:
        return "inputs", "an input operand was modified"
    return None


def verify_firmware(
    fw: Firmware,
    op: str,
    nbytes: int,
    variant: str = "branchfree",
    tests: int = DEFAULT_TESTS,
    seed: int = 1,
    int_args: tuple[int, ...] = (),
) -> Report:
    """`int_args` follow the pointers in every call: (nbytes,) for a routine whose operand length
    is a run-time argument (Algorithm.runtime_length)."""
    n_inputs = 1 if op == "sqr" else 2
    operand_sets = list(test_operands(nbytes, n_inputs, tests, seed))
    calls = [
        Call(tuple(x.to_bytes(nbytes, "little") for x in ops), result_bytes(op, nbytes),
             int_args=int_args)
        for ops in operand_sets
    ]
    results = run_batch(fw, calls)
    first = results[0]
    report = Report(op, nbytes, len(calls), first.core_cycles, first.abi_cycles,
                    max(m.stack_depth for m in results))
    for idx, (call, m) in enumerate(zip(calls, results)):
        bad = check_one(m, oracle(op, nbytes, call.operands))
        if bad is None and variant != "none":
            if m.core_cycles != first.core_cycles or m.abi_cycles != first.abi_cycles:
                bad = ("timing", f"{m.abi_cycles} cycles, but input #0 took {first.abi_cycles}")
            elif variant == "branchfree" and m.pc_digest != first.pc_digest:
                bad = ("timing", "instruction trace differs from input #0 (data-dependent branch)")
            elif variant == "branchfree" and m.addr_digest != first.addr_digest:
                bad = ("timing", "data-address trace differs from input #0")
        if bad:
            report.failures.append(Failure(idx, bad[0], bad[1], call.operands))
    return report


def verify_file(
    asm: Path, symbol: str, op: str, nbytes: int, mcu: str, variant: str, tests: int, workdir: Path,
    len_arg: bool = False,
) -> Report:
    """`len_arg`: the routine takes the operand length in bytes after the pointers (uint16_t)."""
    fw = build_firmware(asm, symbol, mcu, workdir)
    return verify_firmware(fw, op, nbytes, variant, tests, int_args=(nbytes,) if len_arg else ())


def sram_fits(op: str, nbytes: int, mcu: str, stack_reserve: int = 96) -> bool:
    """Whether the runner can place the operands and result of one call in `mcu`'s SRAM, leaving
    `stack_reserve` bytes for the stack (a conservative estimate of the runner's layout)."""
    n_inputs = 1 if op == "sqr" else 2
    need = n_inputs * nbytes + result_bytes(op, nbytes) + stack_reserve + 16 * (n_inputs + 2)
    return need <= get_mcu(mcu).sram_bytes
