"""Interrupt safety (issue 3 item 4).  Multi-level Karatsuba routines allocate their stack frame by
writing SP with OUT, which must be atomic (in r0, SREG; cli; out SPL; out SPH; out SREG), and must
keep nothing below SP.  The runner requests an interrupt right after the routine's k-th instruction;
the harness ISR pushes registers and scribbles 24 bytes below SP.  Every boundary k = 1..N of a
whole call is tried, all in one simulator batch.  A hand-written routine with a non-atomic SP update
shows that the sweep catches the bug it is meant to catch.

Karatsuba calls start with the caller's SP placed so that, after the return address and the saved
registers, SP sits 2 bytes above a 256-byte boundary (atmega128): any frame (pushed pointers, spill
room, temporaries) then changes SPH, and a non-atomic `out SPH; out SPL` would be exposed.  The generated routine with its CLI
removed is swept too, to show the check has teeth."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.verify.inputs import oracle
from avrmp.verify.simulator import Call, Measurement, run_batch
from avrmp.verify.toolchain import Firmware, build_firmware

ASM = Path(__file__).parent / "asm"


def stack_top(saved_registers: int) -> int:
    """Caller's SP such that the frame below the saved registers crosses 0x1000 (atmega128)."""
    return 0x1000 + 2 + saved_registers + 2

pytestmark = pytest.mark.skipif(
    shutil.which("avr-gcc") is None, reason="needs gcc-avr, avr-libc, simavr, libsimavr-dev"
)


def sweep(fw: Firmware, call: Call, top: int | None = None) -> tuple[Measurement, list[Measurement]]:
    """The call without interrupt, then once with an interrupt after each instruction 1..N."""
    base = run_batch(fw, [call], stack_top=top)[0]
    assert base.error is None and not base.irq_taken
    calls = [Call(call.operands, call.result_len, call.int_args, irq_at=k)
             for k in range(1, base.instructions + 1)]
    return base, run_batch(fw, calls, stack_top=top)


def karatsuba_firmware(bits: int, levels: int | None, variant: str, tmp: Path,
                       drop_cli: bool = False, op: str = "mul") -> tuple[Firmware, int]:
    """The routine's firmware and the stack top that makes its frame cross a page boundary."""
    spec = Spec(op, bits, "karatsuba", variant=variant, levels=levels)
    routine = generate(spec)
    asm, _ = write_routine(routine, tmp)
    if drop_cli:
        assert "cli" in routine.asm and "out 62" in routine.asm  # moves SP: the case under test
        asm.write_text(routine.asm.replace("\tcli\n", "\tnop\n"))
    return build_firmware(asm, spec.symbol, spec.mcu, tmp), stack_top(len(routine.saved))


def test_sweep_catches_generated_code_without_cli(tmp_path) -> None:
    """The 256-bit routine (three levels: a full stack frame) with its CLIs replaced by NOPs: the
    frame moves SP across a 256-byte boundary non-atomically, and some interrupt position must
    break the call."""
    fw, top = karatsuba_firmware(256, 3, "branchfree", tmp_path, drop_cli=True)
    rng = random.Random(5)
    a, b = rng.randbytes(32), rng.randbytes(32)
    expected = oracle("mul", 32, (a, b))
    base, ms = sweep(fw, Call((a, b), 64), top)
    assert base.result == expected  # fine without interrupts
    assert any(not sp_in_frame(m, base, top) for m in ms)


def sp_in_frame(m: Measurement, base: Measurement, top: int) -> bool:
    """The interrupt found SP inside the routine's own stack range (never half-updated)."""
    return top - 2 - base.stack_depth <= m.irq_sp <= top


@pytest.mark.parametrize("variant", ["branchfree", "branched"])
@pytest.mark.parametrize("bits, levels", [(128, 2), (256, 3)])
def test_karatsuba_survives_interrupt_at_every_boundary(bits, levels, variant, tmp_path) -> None:
    fw, top = karatsuba_firmware(bits, levels, variant, tmp_path)
    n = bits // 8
    rng = random.Random(bits * 31 + levels)
    a, b = rng.randbytes(n), rng.randbytes(n)
    expected = oracle("mul", n, (a, b))
    base, ms = sweep(fw, Call((a, b), 2 * n), top)
    assert base.result == expected
    assert base.stack_depth > 16  # a real stack frame below the saved registers
    assert len(ms) == base.instructions > 1000
    bad = []
    for k, m in enumerate(ms, start=1):
        ok = (m.error is None and m.irq_taken and m.result == expected and m.callee_saved_ok
              and m.r1_zero and m.sp_ok and not m.bad_writes and m.inputs_unmodified
              and sp_in_frame(m, base, top))
        if not ok:
            bad.append((k, m))
    assert not bad, (
        f"{len(bad)} of {len(ms)} interrupt positions break the routine; first: k={bad[0][0]}: "
        f"{bad[0][1]}"
    )
    # The ISR ran inside the call (its cycles are in the ABI count), not after it.
    assert min(m.abi_cycles for m in ms) > base.abi_cycles
    # An interrupt does not change the routine's own path.
    if variant == "branchfree":
        assert {m.pc_digest for m in ms} == {base.pc_digest}


def test_large_squaring_survives_interrupt_at_every_boundary(tmp_path) -> None:
    """512-bit squaring: a memory level as a subroutine that reserves the frames of its call chain
    once, a leaf that works in that reserved frame and leaves its top bytes to the caller, and
    the leaf's (d, f) for M pushed and popped around the combination."""
    fw, top = karatsuba_firmware(512, None, "branchfree", tmp_path, op="sqr")
    a = random.Random(512).randbytes(64)
    expected = oracle("sqr", 64, (a,))
    base, ms = sweep(fw, Call((a,), 128), top)
    assert base.result == expected
    assert base.stack_depth > 100  # the level's frame and the leaf's, reserved once
    bad = [k for k, m in enumerate(ms, start=1)
           if not (m.error is None and m.irq_taken and m.result == expected and m.callee_saved_ok
                   and m.r1_zero and m.sp_ok and not m.bad_writes and m.inputs_unmodified
                   and sp_in_frame(m, base, top))]
    assert not bad, f"{len(bad)} of {len(ms)} interrupt positions break the routine: {bad[:5]}"
    assert {m.pc_digest for m in ms} == {base.pc_digest}


def sp_writes_atomic(asm: str) -> list[str]:
    """Static check: every OUT to SPH/SPL sits in `in r0, SREG; cli; out SPL; out SPH;
    out SREG, r0` (both halves with interrupts off). Returns the offending lines."""
    lines = [ln.split(";")[0].split() for ln in asm.splitlines()]
    lines = [" ".join(t).replace(" ,", ",") for t in lines]
    want = ["in r0, 63", "cli", "out 61,", "out 62,", "out 63, r0"]
    bad = []
    for i, ln in enumerate(lines):
        if ln.startswith(("out 61,", "out 62,")):
            start = i - (2 if ln.startswith("out 61,") else 3)
            window = lines[start:start + 5] if start >= 0 else []
            if len(window) < 5 or not all(w.startswith(x) for w, x in zip(window, want)):
                bad.append(f"line {i + 1}: {ln}")
    return bad


@pytest.mark.parametrize("bits, levels", [(192, 2), (128, 3), (192, 4), (256, 3), (256, 4)])
def test_sp_writes_are_atomic_sequences(bits, levels) -> None:
    asm = generate(Spec("mul", bits, "karatsuba", levels=levels)).asm
    assert asm.count("out 62,") >= 2  # allocate and release
    assert sp_writes_atomic(asm) == []
    # the check has teeth: the same text without CLI fails it
    assert sp_writes_atomic(asm.replace("\tcli\n", "\tnop\n")) != []


def test_sweep_catches_a_nonatomic_sp_update(tmp_path) -> None:
    """The same sweep over a routine that frees a frame with `out SPH; out SPL` and interrupts
    enabled: for some k the ISR's pushes land in live data and corrupt the result."""
    operand = b"\x12\x34"
    fw = build_firmware(ASM / "sp_adjust.S", "sp_nonatomic", "atmega128", tmp_path)
    base, ms = sweep(fw, Call((operand,), 2))
    assert base.result == operand  # correct without interrupts
    broken = [k for k, m in enumerate(ms, start=1) if m.result != operand]
    assert broken, "no interrupt position exposed the non-atomic SP update"
    assert all(m.irq_taken for m in ms)
    # the atomic twin passes the same sweep
    fw = build_firmware(ASM / "sp_adjust.S", "sp_atomic", "atmega128", tmp_path / "atomic")
    _, ms = sweep(fw, Call((operand,), 2))
    assert all(m.result == operand and m.irq_taken for m in ms)
