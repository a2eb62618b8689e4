"""`avrmp profile`: the simulator's cycles per instruction, summed by the phases the generated
assembly names, add up to the core cycles `avrmp verify` measures; bad input is one line and
exit status 2."""

from __future__ import annotations

import json

import pytest
from cli_run import run
from test_cli import ASM, assert_one_error, needs_toolchain

from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.verify.checks import verify_firmware
from avrmp.verify.profile import LEVEL_SETUP, NO_PHASE, phase_of_lines, profile_firmware
from avrmp.verify.toolchain import build_firmware


def test_phase_of_lines() -> None:
    src = "\tpush r2\n\t; --- load ---\n\tld r2, X+\n\t; === level one ===\n\tmov r3, r2\n" \
          "\t; --- add ---\n\tadd r2, r3\n"
    assert phase_of_lines(src) == [
        ("", NO_PHASE), ("", "load"), ("", "load"), ("level one", LEVEL_SETUP),
        ("level one", LEVEL_SETUP), ("level one", "add"), ("level one", "add")]


@needs_toolchain
@pytest.mark.parametrize("variant", ["branchfree", "branched"])
def test_profile_adds_up_to_the_measured_core(variant, tmp_path) -> None:
    spec = Spec("mul", 128, "karatsuba", variant)
    asm, _ = write_routine(generate(spec), tmp_path)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp_path / "fw")
    prof = profile_firmware(fw, asm, "mul", 16, seed=7)
    report = verify_firmware(fw, "mul", 16, variant, tests=20, interrupts=False)
    assert report.passed and prof.core_cycles == report.core_cycles
    assert sum(r.cycles for r in prof.runs) == prof.core_cycles
    assert all(r.cycles > 0 for r in prof.runs)
    phases = {name: (cycles, n) for name, cycles, n in prof.by_phase()}
    blocks = [name for name in phases if name.startswith("L = A_l * B_l")]
    assert len(blocks) == 1 and phases[blocks[0]][1] == 3  # one L block in each of 3 bases
    # every multiplication block costs at least its 16 MULs
    assert phases[blocks[0]][0] >= 3 * 16 * 2


@needs_toolchain
def test_profile_cli(tmp_path, capsys) -> None:
    report = tmp_path / "p.json"
    status, out, err = run(["profile", ASM / "m16.S", "--symbol", "m16", "--bits", "16",
                            "--op", "mul", "--seed", "3", "--json", report], capsys)
    assert status == 0 and err == ""
    assert out.startswith("m16: 34 core cycles on one random input (seed 3)")
    assert NO_PHASE in out
    data = json.loads(report.read_text())
    assert data["core_cycles"] == 34 and sum(r["cycles"] for r in data["runs"]) == 34
    assert data["by_phase"] == [{"phase": NO_PHASE, "cycles": 34, "runs": 1}]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["profile", ASM / "nothere.S", "--symbol", "m16", "--bits", "16", "--op", "mul"],
         "no such file"),
        (["profile", ASM, "--symbol", "m16", "--bits", "16", "--op", "mul"], "directory"),
        (["profile", ASM / "m16.S", "--symbol", "m16", "--bits", "12", "--op", "mul"],
         "--bits 12"),
        (["profile", ASM / "m16.S", "--symbol", "m16", "--bits", "16", "--op", "mul",
          "--mcu", "atmega9999"], "atmega9999"),
        (["profile", ASM / "m16.S", "--bits", "16", "--op", "mul"], "--symbol"),
        (["profile", ASM / "m16.S", "--symbol", "m16", "--bits", "65536", "--op", "mul"],
         "more than atmega128's 4096: choose a smaller size"),
    ],
    ids=lambda x: "" if isinstance(x, list) else x,
)
def test_profile_bad_input(argv, needle, tmp_path, capsys) -> None:
    report = tmp_path / "p.json"
    status, out, err = run([*argv, "--json", report], capsys)
    assert_one_error(status, err, needle)
    assert out == "" and not report.exists()


@needs_toolchain
def test_profile_refuses_a_wrong_result(capsys) -> None:
    """m16 is a 16-bit routine: run as a 32-bit one its product is wrong, and a profile of it
    would time something else.  The routine fails, as in verify: status 1."""
    status, out, err = run(["profile", ASM / "m16.S", "--symbol", "m16", "--bits", "32",
                            "--op", "mul", "--seed", "3"], capsys)
    assert status == 1 and err.startswith("avrmp: error: ") and err.count("\n") == 1
    assert "result is wrong" in err and out == ""


@needs_toolchain
def test_profile_passes_a_run_time_length(tmp_path, capsys) -> None:
    """An avrmp routine whose length is a run-time argument says so on its spec line, and
    profile passes the length as verify --len-arg does: the same core cycles."""
    spec = Spec("mul", 64, "rps")
    asm, _ = write_routine(generate(spec), tmp_path)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp_path)
    report = verify_firmware(fw, "mul", 8, tests=4, seed=1, int_args=(8,), interrupts=False)
    status, out, err = run(["profile", asm, "--symbol", spec.symbol, "--bits", "64", "--op",
                            "mul", "--seed", "1"], capsys)
    assert status == 0 and err == ""
    assert out.startswith(f"{spec.symbol}: {report.core_cycles} core cycles")


def test_a_phase_ends_where_the_next_function_begins() -> None:
    """A hand-written file of two functions, only the first with phase comments: the second's
    cycles are not counted to the first's last phase."""
    source = ("\t.global a\n\t.type a, @function\na:\n; --- a: add ---\n\tadd r24, r22\n\tret\n"
              "\t.global b\n\t.type b, @function\nb:\n\tsub r24, r22\n\tret\n")
    phases = [phase for _, phase in phase_of_lines(source)]
    assert phases[4:6] == ["a: add", "a: add"]
    assert phases[9:] == [NO_PHASE, NO_PHASE]
