"""Verification: Python's int is the oracle; the runner reports everything else.

Every routine faces the papers' load (1000 random operand pairs) plus edge cases: all-zero, all-0xFF,
single bits, carry chains, and operands built so that |A_l - A_h| and |B_l - B_h| take every sign
(including zero) at every level of a Karatsuba recursion.  Branch-free code must run in identical
cycles with identical PC and data-address traces on every input; branched code in identical cycles.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AvrmpError
from .runner import Call, Measurement, run_batch
from .toolchain import Firmware

DEFAULT_TESTS = 1000


def oracle(op: str, n: int, operands: Sequence[bytes]) -> bytes:
    a = int.from_bytes(operands[0], "little")
    b = int.from_bytes(operands[-1], "little")
    if op == "mul":
        return (a * b).to_bytes(2 * n, "little")
    if op == "sqr":
        return (a * a).to_bytes(2 * n, "little")
    if op == "add":
        return (a + b).to_bytes(n + 1, "little")
    if op == "sub":
        return ((a - b) % (1 << (8 * (n + 1)))).to_bytes(n + 1, "little")
    raise AvrmpError(f"unknown operation {op!r}: choose one of mul, sqr, add, sub")


def result_bytes(op: str, n: int) -> int:
    return 2 * n if op in ("mul", "sqr") else n + 1


def _split_operand(n: int, depth: int, rng: random.Random) -> int:
    """An n-byte operand whose halves compare as <, = or > (chosen at random) at every level of a
    halving recursion `depth` deep, the differences themselves built the same way, so that the
    middle products of inner levels also see every sign."""
    if depth == 0 or n < 2:
        return rng.getrandbits(8 * n)
    k = n // 2  # low half: k bytes; high half: n - k bytes
    rel = rng.choice("<=>")
    high = _split_operand(n - k, depth - 1, rng)
    if rel == "=":
        low = high & ((1 << (8 * k)) - 1)
    else:
        diff = _split_operand(k, depth - 1, rng)
        low = high + diff if rel == ">" else high - diff
        if not 0 <= low < 1 << (8 * k):
            low = rng.getrandbits(8 * k)
    return low | (high << (8 * k))


def test_operands(n: int, n_inputs: int, count: int, seed: int = 1) -> Iterator[tuple[int, ...]]:
    """Edge cases first, then Karatsuba sign patterns, then `count` uniformly random tuples."""
    rng = random.Random(seed)
    top = (1 << (8 * n)) - 1
    edges = [0, top, 1, 1 << (8 * n - 1), top - 1, top >> 1, top ^ (top >> 1)]
    edges += [int.from_bytes(bytes([v]) * n, "little") for v in (0x55, 0xAA, 0x80, 0x01, 0x7F)]
    for x in edges:
        for y in (0, top, 1, x):
            yield (x,) if n_inputs == 1 else (x, y)
    for bit in range(0, 8 * n, max(1, n // 4)):  # single bits across the whole operand
        yield (1 << bit,) if n_inputs == 1 else (1 << bit, top)
    for depth in range(1, 6):
        for _ in range(24):
            ops = tuple(_split_operand(n, depth, rng) for _ in range(n_inputs))
            yield ops
    for _ in range(count):
        yield tuple(rng.getrandbits(8 * n) for _ in range(n_inputs))


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


def _check_one(m: Measurement, expected: bytes) -> tuple[str, str] | None:
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
        bad = _check_one(m, oracle(op, nbytes, call.operands))
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
    from .toolchain import build_firmware

    fw = build_firmware(asm, symbol, mcu, workdir)
    return verify_firmware(fw, op, nbytes, variant, tests, int_args=(nbytes,) if len_arg else ())


def sram_fits(op: str, nbytes: int, mcu: str, stack_reserve: int = 96) -> bool:
    """Whether the runner can place the operands and result of one call in `mcu`'s SRAM, leaving
    `stack_reserve` bytes for the stack (a conservative estimate of the runner's layout)."""
    from .mcu import get_mcu

    n_inputs = 1 if op == "sqr" else 2
    need = n_inputs * nbytes + result_bytes(op, nbytes) + stack_reserve + 16 * (n_inputs + 2)
    return need <= get_mcu(mcu).sram_bytes


def verify_lengths(
    fw: Firmware, op: str, lengths: Sequence[int], variant: str = "branchfree",
    tests: int = 50, seed: int = 1,
) -> dict[int, Report]:
    """Verify a run-time-length routine at each operand length (bytes) with one firmware: every
    length gets the edge cases and `tests` random inputs, and its own constant-time check."""
    return {
        n: verify_firmware(fw, op, n, variant, tests, seed + n, int_args=(n,)) for n in lengths
    }
