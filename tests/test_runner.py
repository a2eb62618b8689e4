"""Runner and toolchain: hand-written routines in tests/asm, good and deliberately broken."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest

from avrmp.errors import AvrmpError
from avrmp.verify.simulator import Call, Measurement, host_binary, run_batch
from avrmp.verify.toolchain import Firmware, build_firmware

ASM = Path(__file__).parent / "asm"

pytestmark = pytest.mark.skipif(
    shutil.which("avr-gcc") is None, reason="needs gcc-avr, avr-libc, simavr, libsimavr-dev"
)


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    root = tmp_path_factory.mktemp("fw")
    cache: dict[tuple[str, str, str], Firmware] = {}

    def _build(name: str, symbol: str, mcu: str = "atmega128") -> Firmware:
        key = (name, symbol, mcu)
        if key not in cache:
            cache[key] = build_firmware(ASM / name, symbol, mcu, root / f"{symbol}-{mcu}")
        return cache[key]

    return _build


def le(b: bytes) -> int:
    return int.from_bytes(b, "little")


def mul_calls(n: int, seed: int = 1) -> list[Call]:
    rng = random.Random(seed)
    edge = [b"\x00\x00", b"\xff\xff", b"\x01\x00", b"\x00\x80", b"\xff\x00"]
    calls = [Call((a, b), 4) for a in edge for b in edge]
    calls += [Call((rng.randbytes(2), rng.randbytes(2)), 4) for _ in range(n)]
    return calls


def assert_clean(m: Measurement) -> None:
    assert m.error is None
    assert m.callee_saved_ok and m.clobbered_regs == ()
    assert m.r1_zero and m.sp_ok
    assert m.bad_writes == ()
    assert m.inputs_unmodified


# ---------------------------------------------------------------- good routine


@pytest.mark.parametrize("mcu", ["atmega128", "atmega328p"])
def test_m16_correct_constant_time(build, mcu):
    fw = build("m16.S", "m16", mcu)
    calls = mul_calls(200)
    ms = run_batch(fw, calls)
    assert len(ms) == len(calls)
    for c, m in zip(calls, ms):
        assert le(m.result) == le(c.operands[0]) * le(c.operands[1])
        assert_clean(m)
    assert len({m.pc_digest for m in ms}) == 1
    assert len({m.addr_digest for m in ms}) == 1
    assert len({(m.abi_cycles, m.core_cycles, m.instructions) for m in ms}) == 1


def test_m16_exact_counts_and_symbols(build):
    fw = build("m16.S", "m16")
    assert fw.core_begin is not None and fw.core_end is not None
    assert fw.code_bytes == 52 and fw.core_code_bytes == 44
    m = run_batch(fw, [Call((b"\x34\x12", b"\x78\x56"), 4)])[0]
    # core: 4 LD (2) + 4 MUL (2) + 3 MOVW + CLR + 6 ADD/ADC + 4 ST (2) = 34
    assert m.core_cycles == 34
    # ABI adds CALL (4), 2 MOVW, CLR r1, RET (4)
    assert m.abi_cycles == 34 + 4 + 2 + 1 + 4
    assert m.instructions == 26
    assert m.stack_depth == 0
    assert m.irq_taken is False


def test_core_equals_abi_without_core_symbols(build):
    fw = build("add8.S", "add8")
    assert fw.core_begin is None and fw.core_code_bytes is None
    assert fw.code_bytes == 22
    m = run_batch(fw, [Call((b"\xff", b"\x02"), 2)])[0]
    assert m.core_cycles == m.abi_cycles


@pytest.mark.parametrize("mcu", ["atmega128", "atmega328p", "attiny85", "atmega2560"])
def test_add8_on_every_core(build, mcu):
    fw = build("add8.S", "add8", mcu)
    rng = random.Random(7)
    calls = [Call((bytes([a]), bytes([b])), 2) for a, b in [(0, 0), (255, 255), (255, 1)]]
    calls += [
        Call((bytes([rng.randrange(256)]), bytes([rng.randrange(256)])), 2) for _ in range(50)
    ]
    ms = run_batch(fw, calls)
    for c, m in zip(calls, ms):
        assert le(m.result) == le(c.operands[0]) + le(c.operands[1])
        assert_clean(m)
        assert m.stack_depth == 0
    assert len({m.abi_cycles for m in ms}) == 1


def test_runs_are_deterministic_and_independent(build):
    fw = build("m16.S", "m16")
    calls = mul_calls(20, seed=3)
    assert run_batch(fw, calls) == run_batch(fw, calls)
    # each call alone gives the same measurement as inside the batch
    assert run_batch(fw, calls[7:8])[0].result == run_batch(fw, calls)[7].result


def test_int_args_stack_depth_and_speed(build):
    fw = build("addn.S", "addn")
    n = 384
    rng = random.Random(5)
    calls = [Call((rng.randbytes(n), rng.randbytes(n)), n + 1, (n,)) for _ in range(1000)]
    t0 = time.perf_counter()
    ms = run_batch(fw, calls)
    elapsed = time.perf_counter() - t0
    for c, m in zip(calls, ms):
        assert le(m.result) == le(c.operands[0]) + le(c.operands[1])
        assert_clean(m)
        assert m.stack_depth == 2  # push r28, r29
    assert ms[0].abi_cycles > 5000
    assert elapsed < 2.0, f"1000 calls of a 5000-cycle routine took {elapsed:.2f} s"


# ---------------------------------------------------------------- broken routines


def test_wrong_result_caught(build):
    fw = build("faulty.S", "m16_wrong")
    calls = mul_calls(20)
    ms = run_batch(fw, calls)
    assert any(le(m.result) != le(c.operands[0]) * le(c.operands[1]) for c, m in zip(calls, ms))


def test_clobbered_r2_caught(build):
    ms = run_batch(build("faulty.S", "m16_clobber"), mul_calls(5))
    assert all(not m.callee_saved_ok and 2 in m.clobbered_regs for m in ms)


def test_nonzero_r1_caught(build):
    ms = run_batch(build("faulty.S", "m16_r1"), mul_calls(5))
    assert all(not m.r1_zero for m in ms)
    assert all(m.callee_saved_ok for m in ms)


def test_write_outside_result_caught(build):
    ms = run_batch(build("faulty.S", "m16_overflow"), mul_calls(5))
    assert all(len(m.bad_writes) == 1 for m in ms)
    assert len({m.bad_writes for m in ms}) == 1  # same fixed address every call


def test_data_dependent_branch_caught(build):
    fw = build("faulty.S", "m16_branch")
    calls = [Call((b"\x00\x05", b"\x07\x09"), 4), Call((b"\x03\x05", b"\x07\x09"), 4)]
    ms = run_batch(fw, calls)
    for c, m in zip(calls, ms):
        assert le(m.result) == le(c.operands[0]) * le(c.operands[1])
    assert ms[0].pc_digest != ms[1].pc_digest
    assert ms[0].abi_cycles != ms[1].abi_cycles


def test_write_below_sp_caught(build):
    ms = run_batch(build("faulty.S", "m16_below_sp"), mul_calls(3))
    assert all(m.bad_writes for m in ms)
    ms = run_batch(build("sp_adjust.S", "below_sp"), [Call((b"\x12\x34",), 2)])
    assert len(ms[0].bad_writes) == 2


def test_modified_input_caught(build):
    ms = run_batch(build("faulty.S", "m16_modify_input"), mul_calls(5))
    assert all(not m.inputs_unmodified for m in ms)
    assert all(m.bad_writes for m in ms)


def test_timeout_and_invalid_opcode(build):
    m = run_batch(build("misc.S", "hang"), [Call((), 0)], max_cycles=1000)[0]
    assert m.error is not None and m.error.startswith("timeout")
    m = run_batch(build("misc.S", "bad_opcode"), [Call((), 0)])[0]
    assert m.error is not None and "invalid opcode" in m.error


# ---------------------------------------------------------------- interrupts


def irq_sweep(fw: Firmware, operand: bytes) -> list[Measurement]:
    base = run_batch(fw, [Call((operand,), 2)])[0]
    assert base.error is None
    calls = [Call((operand,), 2, irq_at=k) for k in range(base.instructions + 1)]
    return run_batch(fw, calls)


def test_atomic_sp_update_survives_interrupt_at_every_boundary(build):
    ms = irq_sweep(build("sp_adjust.S", "sp_atomic"), b"\x12\x34")
    for m in ms:
        assert m.irq_taken
        assert m.result == b"\x12\x34"
        assert_clean(m)
    # the ISR's cycles are included in the call
    assert (
        min(m.abi_cycles for m in ms)
        > run_batch(build("sp_adjust.S", "sp_atomic"), [Call((b"\x12\x34",), 2)])[0].abi_cycles
    )


def test_nonatomic_sp_update_caught_by_some_interrupt(build):
    ms = irq_sweep(build("sp_adjust.S", "sp_nonatomic"), b"\x12\x34")
    assert all(m.irq_taken for m in ms)
    assert not any(m.bad_writes for m in ms)  # invisible without interrupts...
    assert any(m.result != b"\x12\x34" for m in ms)  # ...but an interrupt corrupts it


def test_data_below_sp_destroyed_by_some_interrupt(build):
    ms = irq_sweep(build("sp_adjust.S", "below_sp"), b"\x12\x34")
    assert any(m.result != b"\x12\x34" for m in ms)


def test_isr_not_counted_in_traces(build):
    fw = build("m16.S", "m16")
    base = run_batch(fw, [Call((b"\x34\x12", b"\x78\x56"), 4)])[0]
    with_irq = run_batch(fw, [Call((b"\x34\x12", b"\x78\x56"), 4, irq_at=5)])[0]
    assert with_irq.irq_taken
    assert with_irq.result == base.result
    assert with_irq.pc_digest == base.pc_digest
    assert with_irq.addr_digest == base.addr_digest
    assert with_irq.instructions == base.instructions
    assert with_irq.stack_depth == base.stack_depth
    assert with_irq.abi_cycles > base.abi_cycles


# ---------------------------------------------------------------- user errors


def test_assembler_error_quotes_line(tmp_path):
    with pytest.raises(AvrmpError) as exc:
        build_firmware(ASM / "syntax_error.S", "broken", "atmega128", tmp_path)
    msg = str(exc.value)
    assert "syntax_error.S:5" in msg and "adiw r20, 1" in msg
    assert "\n" not in msg


def test_mul_rejected_on_attiny85(tmp_path):
    with pytest.raises(AvrmpError, match="mul r18, r20"):
        build_firmware(ASM / "m16.S", "m16", "attiny85", tmp_path)


def test_missing_symbol_lists_existing(tmp_path):
    with pytest.raises(AvrmpError) as exc:
        build_firmware(ASM / "m16.S", "nothere", "atmega128", tmp_path)
    msg = str(exc.value)
    assert "nothere" in msg and "m16" in msg and "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(AvrmpError, match="not found"):
        build_firmware(ASM / "no_such_file.S", "x", "atmega128", tmp_path)


def test_unknown_mcu(tmp_path):
    with pytest.raises(AvrmpError, match="atmega9999"):
        build_firmware(ASM / "m16.S", "m16", "atmega9999", tmp_path)


def test_buffers_too_big_for_sram(build):
    fw = build("add8.S", "add8", "attiny85")
    with pytest.raises(AvrmpError, match="SRAM"):
        run_batch(fw, [Call((bytes(300), bytes(300)), 2)])


def test_missing_avr_gcc(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AvrmpError, match="avr-gcc not found"):
        build_firmware(ASM / "m16.S", "m16", "atmega128", tmp_path)


def test_host_binary_named_by_source_hash():
    path = host_binary()
    assert path.is_file() and path.name.startswith("avrmp-host-") and len(path.name) == 27
