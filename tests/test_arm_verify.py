"""The ARM7TDMI verifier against hand-written routines (tests/asm/arm/mul64.S): the right 2-word
multiply passes with its cycle figures; each broken one is refused, naming its problem."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from avrmp.errors import AvrmpError
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.target.arm7tdmi.isa import multiplier_steps
from avrmp.verify.arm_checks import verify_arm
from avrmp.verify.arm_emulator import ArmCall, ArmEmulator
from avrmp.verify.arm_toolchain import build_arm, read_firmware
from avrmp.verify.inputs import ALIASED
from avrmp.verify.inputs import test_operands as operand_load

ASM = Path(__file__).parent / "asm" / "arm" / "mul64.S"

# Core: 4 LDR (3 each), UMULL (m + 2), 3 UMLAL (m + 3), 3 MOV, ADDS, ADC, 4 STR (2 each).
CORE_M1, CORE_M4 = 4 * 3 + 3 + 3 * 4 + 3 + 2 + 4 * 2, 4 * 3 + 6 + 3 * 7 + 3 + 2 + 4 * 2
FRAME = 3 + 4 + 3  # PUSH {r4, r5} (n + 1), POP {r4, r5} (n + 2), BX LR

FAULTS = [  # symbol, variant, check, words in its detail
    ("mul64_wrong", "branchfree", "result", "got "),
    ("mul64_r4", "branchfree", "abi", "callee-saved register(s) r4 not restored"),
    ("mul64_sp", "branchfree", "abi", "stack pointer not restored: SP on return is entry SP+8"),
    ("mul64_writes", "branchfree", "writes", "its own stack frame at result+16"),
    ("mul64_input", "branchfree", "inputs", "operand A modified"),
    ("mul64_hang", "branchfree", "execution", "did not return"),
    ("mul64_branch", "branchfree", "timing", "instruction trace differs"),
    ("mul64_predicated", "branchfree", "timing", "beyond the multiplier's early termination"),
    ("mul64_unmapped", "none", "execution", "read of unmapped memory at 0x00000000"),
    ("mul64_thumb", "none", "execution", "Thumb state"),
    ("mul64_swi", "none", "execution", "SWI"),
    ("mul64_arm_return", "none", "execution", "ARM state to a Thumb caller"),
    ("mul64_pop_pc", "none", "execution", "ARM state to a Thumb caller"),
    ("mul64_peek", "branchfree", "reads", "its own code and data at operand A+8"),
    ("mul64_aliased", "branchfree", "result", "got "),  # only when a and b are one buffer
    ("mul64_dip", "branchfree", "writes", "its own stack frame at operand A+0"),
    ("mul64_below_sp", "branchfree", "writes", "its own stack frame at entry SP-8, entry SP-4"),
    ("mul64_msr", "none", "execution", "MSR that writes the SPSR or the CPSR's control field"),
    ("mul64_unaligned", "none", "execution", "unaligned 4-byte read"),
    ("mul64_force_thumb", "none", "execution", "Thumb state to an ARM caller"),
    ("mul64_alias_leak", "branchfree", "timing", "data-address trace differs from input #"),
    ("mul64", "consttime", "timing", "core), but input #"),  # m varies with the operands
]


def test_the_right_multiply_passes(tmp_path) -> None:
    report = verify_arm(ASM, "mul64", "mul", 2, "branchfree", tests=1000, workdir=tmp_path)
    assert report.passed, report.first_failure()
    assert report.inputs > 1000 and report.seed  # a fresh seed, reported
    assert (report.core_min, report.core_max) == (CORE_M1, CORE_M4)
    assert (report.abi_min, report.abi_max) == (CORE_M1 + FRAME, CORE_M4 + FRAME)
    assert CORE_M1 <= report.core_typical <= CORE_M4
    assert report.abi_typical == report.core_typical + FRAME
    assert report.stack_depth == 8
    assert report.code_bytes == 4 * (1 + 4 + 13 + 2)


def test_typical_cycles_are_the_first_random_inputs() -> None:
    report = verify_arm(ASM, "mul64", "mul", 2, "branchfree", tests=5, seed=7)
    edges = sum(1 for _ in operand_load(8, 2, 0, 7))
    _, b = list(operand_load(8, 2, 1, 7))[edges]
    m0, m1 = (multiplier_steps(w, signed=False) for w in (b & 0xFFFF_FFFF, b >> 32))
    # UMULL by b0, UMLAL by b1, UMLAL by b0, UMLAL by b1
    assert report.core_typical == CORE_M1 - 4 + 2 * m0 + 2 * m1
    runs = 250 * 8  # byte runs, then as many operands of extreme words, then (x, x) pairs
    assert report.inputs == edges + 5 + 2 * runs + ALIASED


@pytest.mark.parametrize("symbol, variant, check, words", FAULTS,
                         ids=[f"{f[0]}-{f[1]}" for f in FAULTS])
def test_a_broken_routine_is_refused(tmp_path, symbol, variant, check, words) -> None:
    report = verify_arm(ASM, symbol, "mul", 2, variant, tests=50, seed=7, workdir=tmp_path)
    assert not report.passed
    failure = report.failures[0]
    assert failure.check == check, failure.describe()
    assert words in failure.detail, failure.describe()
    assert report.first_failure().startswith(f"input #{failure.index} (")


@pytest.mark.parametrize("symbol", ["mul64_literal", "mul64_ram", "mul64_align"])
def test_what_is_not_data_may_steer_it(symbol, tmp_path) -> None:
    """Its literal pool (in flash or in RAM) may be read; a path chosen by a buffer's
    alignment is compared only with calls of that alignment (placement_class)."""
    report = verify_arm(ASM, symbol, "mul", 2, "branchfree", tests=50, seed=7, workdir=tmp_path)
    assert report.passed, report.first_failure()


def test_a_dropped_carry_of_a_word_catcher_is_found(tmp_path) -> None:
    """The generated 256-bit hybrid routine with the ADCS that adds the caught carries of
    super-column 1's column +3 made an ADDS: the byte-level operands missed it on most seeds;
    the extreme-word operands find it on each.  (Super-column 0's is no mutant: its caught
    carries for that column are always 0.)"""
    routine = generate(Spec("mul", 256, "hybrid", target="arm7tdmi"))
    asm, _ = write_routine(routine, tmp_path)
    lines = asm.read_text().splitlines()
    sites = [i for i, ln in enumerate(lines) if ln.split()[:1] == ["adcs"] and "lsr #8" in ln]
    at = sites[1]
    lines[at] = lines[at].replace("adcs", "adds", 1)
    asm.write_text("\n".join(lines) + "\n")
    for seed in (1, 2, 3):
        report = verify_arm(asm, routine.spec.symbol, "mul", 8, "branchfree", tests=50,
                            seed=seed, workdir=tmp_path)
        assert not report.passed and report.failures[0].check == "result", seed


def test_a_square_gets_its_one_operand(tmp_path) -> None:
    report = verify_arm(ASM, "sqr64", "sqr", 2, "consttime", tests=50, seed=1, workdir=tmp_path)
    assert not report.passed  # m varies with a: consttime refuses what branchfree passes
    assert report.failures[0].check == "timing"
    report = verify_arm(ASM, "sqr64", "sqr", 2, "branchfree", tests=200, workdir=tmp_path)
    assert report.passed, report.first_failure()
    assert report.core_max == CORE_M4 + 1


def test_int_arguments_follow_the_pointers(tmp_path) -> None:
    emulator = ArmEmulator(build_arm(ASM, "args", tmp_path))
    a, b = bytes(range(8)), bytes(range(8, 16))
    m = emulator.call(ArmCall((a, b), 16, int_args=(0x1234,), seed=1))
    r1, r2, r3 = (int.from_bytes(m.result[i:i + 4], "little") for i in (0, 4, 8))
    assert (r1, r2, r3) == (m.addresses["operand A"], m.addresses["operand B"], 0x1234)
    m = emulator.call(ArmCall((a,), 16, int_args=(5, 6), seed=2))
    assert m.result[4:12] == bytes([5, 0, 0, 0, 6, 0, 0, 0])
    with pytest.raises(AvrmpError, match="at most 4"):
        emulator.call(ArmCall((a, b), 16, int_args=(1, 2), seed=3))


def test_the_branch_passes_without_a_timing_discipline(tmp_path) -> None:
    report = verify_arm(ASM, "mul64_branch", "mul", 2, "none", tests=50, seed=3,
                        workdir=tmp_path)
    assert report.passed, report.first_failure()
    assert report.core_min < report.core_max


def test_the_same_seed_gives_the_same_run(tmp_path) -> None:
    a = verify_arm(ASM, "mul64_wrong", "mul", 2, "none", tests=30, seed=11, workdir=tmp_path)
    b = verify_arm(ASM, "mul64_wrong", "mul", 2, "none", tests=30, seed=11, workdir=tmp_path)
    assert [f.describe() for f in a.failures] == [f.describe() for f in b.failures]
    assert a.seed == 11


def test_start_states_vary_and_traces_are_relative(tmp_path) -> None:
    """Different seeds put the buffers and SP elsewhere and the registers and flags at other
    values, yet a branch-free routine's PC and data-address traces do not change."""
    fw = build_arm(ASM, "mul64", tmp_path)
    emulator = ArmEmulator(fw)
    rng = random.Random(5)
    runs = []
    for seed in range(20):
        a, b = rng.randbytes(8), rng.randbytes(8)
        m = emulator.call(ArmCall((a, b), 16, seed=seed))
        expected = int.from_bytes(a, "little") * int.from_bytes(b, "little")
        assert int.from_bytes(m.result, "little") == expected
        runs.append(m)
    assert len({m.addresses["result"] for m in runs}) > 10
    assert len({m.addresses["entry SP"] for m in runs}) > 10
    assert all(m.addresses["entry SP"] % 8 == 0 and m.addresses["result"] % 4 == 0
               for m in runs)
    assert len({m.regs_before for m in runs}) == 20
    assert len({m.pc_digest for m in runs}) == 1 and len({m.data_digest for m in runs}) == 1


def test_toolchain_errors_name_the_problem(tmp_path) -> None:
    bad = tmp_path / "bad.S"
    bad.write_text("    .arm\nf:\n    umlal r0, r1\n")
    with pytest.raises(AvrmpError, match=r"assembling bad.S failed: .*bad.S:3"):
        build_arm(bad, "f", tmp_path)
    with pytest.raises(AvrmpError, match="symbol 'nothere' not found"):
        build_arm(ASM, "nothere", tmp_path)
    fw = build_arm(ASM, "mul64", tmp_path)
    assert fw.core_begin is not None and fw.entry < fw.core_begin < fw.core_end < fw.end
    assert read_firmware(fw.elf, "mul64_wrong").core == (
        read_firmware(fw.elf, "mul64_wrong").entry, read_firmware(fw.elf, "mul64_wrong").end)


def test_bad_requests_are_refused(tmp_path) -> None:
    with pytest.raises(AvrmpError, match="choose one of mul, sqr"):
        verify_arm(ASM, "mul64", "add", 2, "branchfree", workdir=tmp_path)
    with pytest.raises(AvrmpError, match="variant 'fast'"):
        verify_arm(ASM, "mul64", "mul", 2, "fast", workdir=tmp_path)
