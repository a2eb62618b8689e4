"""The command line: every error a user can cause ends in exactly one line on stderr starting
"avrmp: error:", exit status 2, no traceback, and no output file left behind; a routine that fails
verification exits 1 naming the first failing input; generated .S/.h files drop into an avr-gcc
build; `list` and `bench --json` say what they should."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import run

from avrmp.bench.catalog import catalog
from avrmp.errors import AvrmpError
from avrmp.output_files import require_writable, write_all
from avrmp.regalloc.vprogram import AllocationError
from avrmp.routine.files import write_routine
from avrmp.routine.generate import flash_floor, generate
from avrmp.routine.rebuild import rebuild
from avrmp.spec import Spec
from avrmp.techniques.arm7tdmi.registry import ARM_ALGORITHMS
from avrmp.techniques.registry import ALGORITHMS, Algorithm
from avrmp.verify.inputs import test_operands as operand_sets

ASM = Path(__file__).parent / "asm"

needs_toolchain = pytest.mark.skipif(
    shutil.which("avr-gcc") is None, reason="needs gcc-avr, avr-libc, simavr, libsimavr-dev"
)


def assert_one_error(status: int, err: str, *needles: str) -> None:
    lines = err.splitlines()
    assert status == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("avrmp: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*")) if path.exists() else []


# ------------------------------------------------------------------ gen: bad input, no output

GEN_ERRORS = [
    (["mul", "--bits", "12"], "--bits 12"),
    (["mul", "--bits", "0"], "--bits 0"),
    (["mul", "--bits", "-8"], "--bits -8"),
    (["mul", "--bits", "x"], "--bits"),
    (["mul", "--bits", "4096"], "2048 bits"),  # product scanning: at most 256 bytes
    (["mul", "--bits", "8", "--algo", "karatsuba"], "16 to"),  # Karatsuba needs 2 bytes
    (["mul", "--bits", "1024", "--mcu", "atmega328p"], "flash"),  # 1024-bit unrolled > 32 KB
    (["frob", "--bits", "16"], "frob"),
    (["mul", "--bits", "16", "--algo", "frob"], "unknown algorithm 'frob'"),
    (["sqr", "--bits", "64", "--algo", "hybrid"], "does not do sqr"),
    (["mul", "--bits", "16", "--mcu", "atmega9999"], "atmega9999"),
    (["mul", "--bits", "64", "--mcu", "attiny85", "--algo", "karatsuba"], "multiplier"),
    (["mul", "--bits", "16", "--variant", "fast"], "fast"),
    (["mul", "--bits", "64", "--algo", "product-scanning", "--variant", "branched"], "branched"),
    (["mul", "--bits", "128", "--algo", "karatsuba", "--levels", "9"], "supports levels"),
    (["mul", "--bits", "128", "--algo", "karatsuba", "--levels", "0"], "--levels 0"),
    (["mul", "--bits", "128", "--algo", "karatsuba", "--levels", "-1"], "--levels -1"),
    (["mul", "--bits", "128", "--algo", "karatsuba", "--levels", "two"], "--levels"),
    (["mul", "--bits", "56", "--algo", "karatsuba", "--levels", "2"], "--levels 2"),  # 7 bytes
    (["mul", "--bits", "128", "--levels", "2"], "does not apply"),
    (["mul", "--bits", "512", "--algo", "karatsuba", "--levels", "3"], "allows 1, 2"),
    (["sqr", "--bits", "200", "--algo", "karatsuba"], "choose 208 bits"),
    (["mul", "--bits", "6\n4"], "--bits"),  # a line break in an argument: still one line
    (["mul", "--bits", "160", "--algo", "hybrid", "--d", "99"], "--d"),
    (["mul", "--bits", "64", "--looped", "--algo", "karatsuba"], "--looped"),
    (["mul", "--bits", "16", "--name", "1bad"], "C identifier"),
    (["mul", "--bits", "16", "--name", "a" * 256], "at most"),
    (["mul", "--bits", "16", "--name", "int"], "C or C++ keyword"),  # the .h would not compile
    (["mul", "--bits", "16", "--name", ""], "is empty"),  # not taken for the default
    (["mul", "--bits", "16", "--name", "uint8_t"], "a type the header uses"),
    (["mul", "--bits", "16", "--name", "loop"], "a name the program has already"),  # Arduino
    (["mul", "--bits", "16", "--name", "__x"], "reserved to the compiler"),
    # avr-libc's macros for the part (a declaration `void PORTB(...)` does not compile)
    (["mul", "--bits", "16", "--name", "PORTB"], "a program for atmega128 that includes"),
    (["mul", "--bits", "16", "--name", "RAMPZ", "--mcu", "atmega2560"], "for atmega2560 that"),
    (["mul", "--bits", "16", "--name", "UINT8_MAX"], "could not declare it"),  # <stdint.h>
    (["mul", "--bits", "16", "--name", "memcpy"], "could not declare it"),  # <string.h>
    (["mul", "--bits", "16", "--name", "M_PI"], "could not declare it"),  # <math.h>
    (["mul", "--bits", "16", "--name", "min"], "a name the program has already"),  # Arduino.h
    (["mul", "--bits", "16", "--name", "new"], "C or C++ keyword"),  # a sketch reads the .h as C++
    (["mul", "--target", "host64", "--repr", "radix64", "--name", "_Stdlib"], "reserved"),
    (["mul", "--target", "host64", "--repr", "radix64", "--name", "a" * 300], "at most 128"),
    (["mul", "--bits", "16", "--name", "delay"], "a name the program has already"),  # Arduino
    (["mul", "--algo", "product-scanning"], "--bits is required"),
    (["mul", "--bits", "16", "--algo", ""], "--algo ''"),
    # buffers and stack beyond SRAM (1 KB of operands and result, about 1.1 KB of frames)
    (["mul", "--bits", "2048", "--algo", "karatsuba", "--mcu", "atmega328p"], "bytes of SRAM"),
    (["mul", "--target", "host64", "--repr", "radix64", "--bits", "256"], "not --bits"),
    (["mul", "--target", "host64", "--repr", "radix51", "--mcu", "attiny85"], "not --mcu"),
    (["mul", "--target", "arm7tdmi", "--bits", "64", "--mcu", "attiny85"], "no MCU"),
    (["mul", "--bits", "64", "--algo", "operand-caching", "--e", "200"], "at most 8"),
    (["mul", "--bits", "6_4"], "not a whole number"),
    (["mul", "--bits", "9" * 5000], "5000 digits; far too many"),
    (["mul", "--bits", "64", "--looped", "--looped"], "--looped: given twice"),
    (["mul", "--target", "arm7tdmi", "--bits", "64", "--mcu", "atmega128"], "no MCU"),
    (["mul", "--target", "arm7tdmi", "--bits", "64", "--mcu", "{x}"], "no MCU"),  # braces kept
    (["mul", "--target", "host64", "--repr", "radix51", "--variant", "branchfree"], "--variant"),
    (["mul", "--bits", "64", "--bits", "128"], "--bits: given twice"),  # not the last taken
    (["mul", "--bits=64", "--bit", "128"], "--bits: given twice"),  # an abbreviation too
]


@pytest.mark.parametrize("args, needle", GEN_ERRORS, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_gen_bad_input(args, needle, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    status, stdout, err = run(["gen", *args, "-o", out], capsys)
    assert_one_error(status, err, needle)
    assert stdout == ""
    assert files_under(out) == []


@pytest.mark.parametrize("argv, needle", [
    ([], "give a command: gen, rebuild"),
    (["--bogus"], "unknown option --bogus: the command comes first"),
    (["--bits", "64", "gen"], "unknown option --bits"),
])
def test_a_command_is_required_first(argv, needle, capsys) -> None:
    status, _, err = run(argv, capsys)
    assert_one_error(status, err, needle)


def test_a_line_break_in_a_path_stays_in_one_line(tmp_path, capsys) -> None:
    (tmp_path / "f").write_text("")  # not a folder
    status, _, err = run(["gen", "mul", "--bits", "64", "-o", tmp_path / "f" / "a\nb"], capsys)
    assert_one_error(status, err, "a\\nb")


def test_gen_missing_output_dir_argument(capsys) -> None:
    status, _, err = run(["gen", "mul", "--bits", "16"], capsys)
    assert_one_error(status, err, "-o/--out")
    status, _, err = run(["gen", "mul", "--bits", "16", "-o", ""], capsys)
    assert_one_error(status, err, "empty path")


def test_arm_routine_rebuilds_and_is_not_run_as_avr(tmp_path, capsys) -> None:
    status, out, _ = run(["gen", "mul", "--target", "arm7tdmi", "--bits", "64", "-o",
                          tmp_path / "a"], capsys)
    assert status == 0
    asm = Path(out.split()[0])
    status, out, _ = run(["rebuild", asm, "-o", tmp_path / "b"], capsys)
    assert status == 0 and "identical to" in out
    status, _, err = run(["profile", asm, "--symbol", asm.stem, "--bits", "64", "--op", "mul"],
                         capsys)
    assert_one_error(status, err, "ARM7TDMI routine")
    status, _, err = run(["verify", asm, "--symbol", asm.stem, "--bits", "64", "--op", "mul"],
                         capsys)
    assert_one_error(status, err, "verify it with --target arm7tdmi")


@pytest.mark.parametrize("option", [["--bits", "13"], ["--algo", "nonsense"],
                                    ["--variant", "branched"], ["--looped"]])
def test_tune_catalog_refuses_the_options_of_one_routine(option, tmp_path, capsys) -> None:
    status, _, err = run(["tune", "--catalog", *option, "--table", tmp_path / "t.json"], capsys)
    assert_one_error(status, err, f"{option[0]} does not apply")
    assert files_under(tmp_path) == []


def test_bench_sweeps_each_parameter_over_the_algorithms_that_take_it() -> None:
    specs = catalog(ops=["mul"], bits=[64], params={"e": [4], "d": [3]})
    assert {(s.algo, s.d, s.e) for s in specs} == {
        ("hybrid", 3, None), ("operand-caching", None, 4),
        ("consecutive-operand-caching", None, 4)}


@pytest.mark.parametrize("option, value", [("--jitter", "-1"), ("--jitter", "10001"),
                                           ("--jobs", "0"),
                                           ("--jobs", str((os.cpu_count() or 1) + 1))])
def test_tune_refuses_a_bad_count(option, value, tmp_path, capsys) -> None:
    status, _, err = run(["tune", "mul", "--bits", "64", option, value, "--table",
                          tmp_path / "t.json"], capsys)
    assert_one_error(status, err, option)
    assert files_under(tmp_path) == []


def test_gen_reports_a_build_that_cannot_allocate(tmp_path, capsys, monkeypatch) -> None:
    """A spec no build of which fits the registers (a generator limit the option lists should
    have kept out) still ends in one line and status 2, with nothing written."""
    def no_fit(*_, **__):
        raise AllocationError("no option for levels fits the registers and memory")

    monkeypatch.setattr(Algorithm, "build", no_fit)
    status, _, err = run(["gen", "mul", "--bits", "296", "-o", tmp_path / "out"], capsys)
    assert_one_error(status, err, "avrmp_mul296", "fits the registers")
    assert files_under(tmp_path) == []


def test_gen_unwritable_output(tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status, _, err = run(["gen", "mul", "--bits", "16", "-o", blocker], capsys)
    assert_one_error(status, err, "cannot write")
    status, _, err = run(["gen", "mul", "--bits", "16", "-o", blocker / "sub"], capsys)
    assert_one_error(status, err, "cannot write")


# The long commands (minutes) check their outputs before they start: the work they would do first
# is replaced by a failure, so a test that reaches it fails.
LONG_RUNS = [
    (["bundle", "-o", "{out}"], "avrmp.library.bundle.choose"),
    (["uecc", "--mcu", "atmega328p", "-o", "{out}"], "avrmp.library.uecc.choose"),
    (["best", "mul", "--bits", "256", "-o", "{out}"], "avrmp.cli.pick"),
    (["tune", "mul", "--bits", "64", "--algo", "karatsuba", "--table", "{out}/t.json"],
     "avrmp.cli.tune"),
    (["gen", "mul", "--bits", "64", "--tune", "-o", "{out}"], "avrmp.cli.generate"),
    (["bench", "--algos", "ripple", "--ops", "add", "--bits", "128", "--json", "{out}/b.json"],
     "avrmp.cli.run"),
    (["bench", "--target", "arm7tdmi", "--markdown", "{out}/b.md"], "avrmp.cli.measure_arm"),
]


@pytest.mark.parametrize("argv, first_step", LONG_RUNS, ids=lambda x: x if isinstance(x, str) else x[0])
def test_long_runs_check_their_output_first(argv, first_step, tmp_path, capsys,
                                            monkeypatch) -> None:
    def too_late(*_, **__):
        raise AssertionError("the run started before its output was checked")

    monkeypatch.setattr(first_step, too_late)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status, _, err = run([a.format(out=blocker / "sub") for a in argv], capsys)
    assert_one_error(status, err, "cannot write", "Not a directory")
    assert files_under(tmp_path) == [blocker]


def test_bench_checks_readme_markers_first(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("avrmp.cli.run", lambda *_, **__: pytest.fail("measured first"))
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    status, _, err = run(["bench", "--algos", "ripple", "--ops", "add", "--bits", "128",
                          "--readme", readme], capsys)
    assert_one_error(status, err, "markers")


@pytest.mark.parametrize("text", ["<!-- bench:end -->\n<!-- bench:begin -->\n", None,
                                  "<!-- bench:begin -->\n<!-- bench:end -->\n" * 2])
def test_bench_checks_readme_order_and_encoding_first(text, tmp_path, capsys,
                                                      monkeypatch) -> None:
    """Markers out of order or twice (one table would stay stale), or a README that is not
    UTF-8: one line, before measuring."""
    monkeypatch.setattr("avrmp.cli.run", lambda *_, **__: pytest.fail("measured first"))
    readme = tmp_path / "README.md"
    if text is None:
        readme.write_bytes(b"\xff\xfe<!-- bench:begin -->")
    else:
        readme.write_text(text)
    status, _, err = run(["bench", "--algos", "ripple", "--ops", "add", "--bits", "128",
                          "--readme", readme], capsys)
    assert_one_error(status, err, str(readme))


def test_bench_refuses_one_file_for_two_outputs(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("avrmp.cli.run", lambda *_, **__: pytest.fail("measured first"))
    readme = tmp_path / "README.md"
    readme.write_text("<!-- bench:begin -->\n<!-- bench:end -->\n")
    status, _, err = run(["bench", "--algos", "ripple", "--ops", "add", "--bits", "128",
                          "--readme", readme, "--markdown", readme], capsys)
    assert_one_error(status, err, "different files")
    assert readme.read_text() == "<!-- bench:begin -->\n<!-- bench:end -->\n"


@pytest.mark.parametrize("name", ["plot", "plot.xyz"])
def test_bench_refuses_a_plot_format_first(name, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("avrmp.cli.run", lambda *_, **__: pytest.fail("measured first"))
    status, _, err = run(["bench", "--algos", "ripple", "--ops", "add", "--bits", "128",
                          "--plot", tmp_path / name], capsys)
    assert_one_error(status, err, "--plot")


@pytest.mark.parametrize("in_the_way", ["cycles-relative.png", "cycles-per-product.png"])
def test_bench_checks_every_plot_first(in_the_way, tmp_path, capsys, monkeypatch) -> None:
    """--plot names three files, and each is checked before the run."""
    monkeypatch.setattr("avrmp.cli.run", lambda *_, **__: pytest.fail("measured first"))
    (tmp_path / in_the_way).mkdir()
    bench = ["bench", "--algos", "ripple", "--ops", "add", "--bits", "128"]
    status, _, err = run([*bench, "--plot", tmp_path / "cycles.png"], capsys)
    assert_one_error(status, err, "cannot write", in_the_way)
    (tmp_path / in_the_way).rmdir()
    status, _, err = run([*bench, "--plot", tmp_path / "cycles.png", "--json",
                          tmp_path / in_the_way], capsys)
    assert_one_error(status, err, "different files", in_the_way)
    assert list(tmp_path.iterdir()) == []


def test_rebuild_refuses_to_overwrite_its_input_with_the_header(tmp_path, capsys) -> None:
    status, out, _ = run(["gen", "mul", "--bits", "64", "-o", tmp_path], capsys)
    asm = Path(out.split()[0])
    disguised = tmp_path / "avrmp_mul64_product_scanning.h"
    disguised.write_text(asm.read_text())
    status, _, err = run(["rebuild", disguised, "-o", tmp_path], capsys)
    assert_one_error(status, err, "C header")
    assert disguised.read_text() == asm.read_text()


def test_rebuild_keeps_an_input_with_crlf_and_checks_its_outputs_first(tmp_path, capsys) -> None:
    """The same routine with CRLF line ends is not "identical": rebuild would rewrite it, so it
    is refused; a loop of links as -o is named before the verification."""
    status, out, _ = run(["gen", "add", "--bits", "16", "-o", tmp_path], capsys)
    asm = Path(out.split()[0])
    crlf = asm.read_bytes().replace(b"\n", b"\r\n")
    asm.write_bytes(crlf)
    status, _, err = run(["rebuild", asm, "-o", tmp_path], capsys)
    assert_one_error(status, err, "differs from the routine its header makes")
    assert asm.read_bytes() == crlf
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    status, _, err = run(["rebuild", asm, "-o", tmp_path / "loop1"], capsys)
    assert_one_error(status, err, "is a link to nothing")
    status, _, err = run(["bench", "--bits", "16", "--ops", "add", "--json", tmp_path / "loop1"],
                         capsys)
    assert_one_error(status, err, "a link to nothing (or a loop of links)")


def test_rebuild_edited_choice_is_one_line(tmp_path, capsys) -> None:
    """A recorded choice edited to a value no search makes (e = 0) is refused in one line."""
    status, out, _ = run(["gen", "mul", "--bits", "64", "--algo", "operand-caching", "-o",
                          tmp_path], capsys)
    asm = Path(out.split()[0])
    asm.write_text(re.sub(r"(?m)^;   e: \d+$", ";   e: 0", asm.read_text()))
    status, _, err = run(["rebuild", asm, "-o", tmp_path / "out"], capsys)
    assert_one_error(status, err, "recorded choices do not fit")


@pytest.mark.parametrize("edit, needle", [
    (r"\1 e=4", "its recorded choices do not fit its spec line (e 3 is not one of its options)"),
    (r"\1 zzz=1", "the spec line has an unknown field 'zzz'"),
    (r"\1 e=3 e=3", "the spec line gives e twice"),
])
def test_rebuild_names_what_is_wrong_with_an_edited_spec_line(edit, needle, tmp_path,
                                                               capsys) -> None:
    status, out, _ = run(["gen", "mul", "--bits", "136", "--algo", "operand-caching", "--e", "3",
                          "-o", tmp_path], capsys)
    asm = Path(out.split()[0])
    edited = re.sub(r"(?m)^(; spec: .*?) e=3$", edit, asm.read_text())
    assert edited != asm.read_text()
    asm.write_text(edited)
    status, _, err = run(["rebuild", asm, "-o", tmp_path / "out"], capsys)
    assert_one_error(status, err, needle)
    assert not (tmp_path / "out").exists()
    if needle.startswith("the spec line"):  # verify reads the spec line too
        status, _, err = run(["verify", asm, "--symbol", asm.stem, "--bits", "136", "--op",
                              "mul"], capsys)
        assert_one_error(status, err, str(asm), needle)


@pytest.mark.parametrize("missing", [["--missing"], []])
@pytest.mark.parametrize("content", ["[1, 2]", '{"mul 32 product-scanning branchfree": 5}',
                                     "not json"])
def test_tune_refuses_a_malformed_table(content, missing, tmp_path, capsys,
                                        monkeypatch) -> None:
    """Before it searches: the search's result would have nowhere to go."""
    import avrmp.routine.tune

    monkeypatch.setattr(avrmp.routine.tune, "search", lambda *_: pytest.fail("searched"))
    table = tmp_path / "t.json"
    table.write_text(content)
    status, _, err = run(["tune", "mul", "--bits", "32", *missing, "--table", table], capsys)
    assert_one_error(status, err, "cannot read the tuned table", "give another --table")
    assert table.read_text() == content


def test_tune_missing_retunes_an_entry_that_no_longer_replays(tmp_path, capsys) -> None:
    """--missing treats an entry whose replay fails (here an out-of-range recorded column
    order) as one to search again, and replaces it."""
    table = tmp_path / "t.json"
    assert run(["tune", "mul", "--bits", "32", "--table", table], capsys)[0] == 0
    good = json.loads(table.read_text())
    broken = {k: [["schedule", {"order": 99, "release": {}}, []]] for k in good}
    table.write_text(json.dumps(broken))
    status, out, _ = run(["tune", "mul", "--bits", "32", "--missing", "--table", table], capsys)
    assert status == 0 and "1 routine(s) tuned" in out
    assert json.loads(table.read_text()) == good


def test_tune_into_a_new_folder(tmp_path, capsys) -> None:
    table = tmp_path / "new" / "t.json"
    status, _, _ = run(["tune", "mul", "--bits", "32", "--table", table], capsys)
    assert status == 0 and table.exists()


def test_a_linked_output_is_written_through_its_link(tmp_path, capsys) -> None:
    """A --table (or any output) that is a symbolic link: the file it points to gets the new
    text and the link stays a link."""
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("{}\n")
    link.symlink_to(real.name)
    status, _, _ = run(["tune", "add", "--bits", "32", "--table", link], capsys)
    assert status == 0 and link.is_symlink() and "add 32 ripple" in real.read_text()


def test_a_read_only_output_is_not_replaced(tmp_path, capsys, monkeypatch) -> None:
    """An output the user made read-only keeps its text (the replacing rename would not ask);
    os.access is what the check reads (root may write anything)."""
    out = tmp_path / "out"
    status, _, _ = run(["gen", "add", "--bits", "32", "-o", out], capsys)
    asm = next(out.glob("*.S"))
    before = asm.read_text()
    monkeypatch.setattr("os.access", lambda path, mode: Path(path) != asm)
    status, _, err = run(["gen", "add", "--bits", "32", "--name", asm.stem, "-o", out], capsys)
    assert status == 2 and "it is read-only" in err and asm.read_text() == before
    table = tmp_path / "t.json"
    table.write_text("{}\n")
    monkeypatch.setattr("os.access", lambda path, mode: Path(path) != table)
    monkeypatch.setattr("avrmp.cli.tune", lambda *_, **__: pytest.fail("searched first"))
    status, _, err = run(["tune", "add", "--bits", "32", "--table", table], capsys)
    assert status == 2 and "it is read-only" in err  # before the search, not after it


def test_outputs_a_rename_would_replace_unasked_are_refused(tmp_path, capsys) -> None:
    """A file read-only by its mode (refused even for root, whose access() says yes), a pipe or
    a device, a loop of links: each is refused and kept; a file replaced keeps its mode."""
    out = tmp_path / "out"
    gen = ["gen", "add", "--bits", "32", "-o", out]
    assert run(gen, capsys)[0] == 0
    asm, hdr = next(out.glob("*.S")), next(out.glob("*.h"))
    asm.chmod(0o600)
    assert run(gen, capsys)[0] == 0 and stat.S_IMODE(asm.stat().st_mode) == 0o600
    asm.chmod(0o444)
    status, _, err = run(gen, capsys)
    assert_one_error(status, err, "it is read-only")
    asm.chmod(0o644)
    asm.unlink()
    os.mkfifo(asm)
    status, _, err = run(gen, capsys)
    assert_one_error(status, err, "not a regular file")
    assert stat.S_ISFIFO(asm.lstat().st_mode)
    asm.unlink()
    hdr.unlink()
    hdr.symlink_to(hdr.name)  # a link to itself
    status, _, err = run(gen, capsys)
    assert_one_error(status, err, "a link to nothing (or a loop of links)")
    assert hdr.is_symlink() and not asm.exists()
    hdr.unlink()
    hdr.symlink_to(tmp_path / "gone" / "x.h")  # a link to nothing, in a folder not there
    status, _, err = run(gen, capsys)
    assert_one_error(status, err, "a link to nothing (or a loop of links)")
    assert not (tmp_path / "gone").exists() and not asm.exists()


def test_a_routine_must_leave_room_for_a_program(tmp_path, capsys) -> None:
    """440-bit product scanning takes 32,634 of the ATmega328P's 32,768 bytes: no program
    (vectors, start-up, main) fits beside it, so gen refuses it; 432 bits fits."""
    base = ["gen", "mul", "--algo", "product-scanning", "--mcu", "atmega328p", "-o", tmp_path]
    status, _, err = run([*base, "--bits", "440"], capsys)
    assert_one_error(status, err, "the least program around it 138 more")
    assert files_under(tmp_path) == []
    assert run([*base, "--bits", "432"], capsys)[0] == 0


def test_a_size_far_beyond_the_flash_is_refused_before_it_is_generated(tmp_path, capsys) -> None:
    """2048-bit product scanning has 65,536 product sites of at least 4 bytes each: gen says so
    before it generates the routine (which takes seconds)."""
    start = time.monotonic()
    status, _, err = run(["gen", "mul", "--bits", "2048", "--mcu", "atmega328p", "-o",
                          tmp_path], capsys)
    assert_one_error(status, err, "needs at least 262144 bytes of flash")
    assert time.monotonic() - start < 8 and files_under(tmp_path) == []


@pytest.mark.parametrize("spec", [
    Spec("mul", 128, "product-scanning"), Spec("sqr", 128, "product-scanning"),
    Spec("mul", 128, "operand-scanning"), Spec("mul", 128, "hybrid"),
    Spec("mul", 128, "operand-caching"), Spec("mul", 128, "consecutive-operand-caching"),
    Spec("mul", 64, "product-scanning", mcu="attiny85"),
    Spec("sqr", 64, "product-scanning", mcu="attiny85"),
    Spec("mul", 64, "operand-caching", looped=True),
], ids=str)
def test_the_flash_floor_is_below_the_code(spec) -> None:
    """flash_floor may refuse a routine before it is built only if it never exceeds the code."""
    floor = flash_floor(spec)
    assert floor <= generate(spec).code_bytes
    assert (floor == 0) == spec.looped


def test_a_path_the_system_refuses_is_one_line(tmp_path, capsys) -> None:
    """A name longer than the file system takes (ENAMETOOLONG) fails in one line, status 2."""
    long = tmp_path / ("x" * 300)
    status, _, err = run(["gen", "mul", "--bits", "32", "-o", long], capsys)
    assert_one_error(status, err, "File name too long")
    status, _, err = run(verify_args(Path(f"{long}.S")), capsys)
    assert_one_error(status, err, "File name too long")


@pytest.mark.parametrize("argv", [["list"], ["best", "add", "--bits", "32", "-o", "OUT"]])
def test_a_closed_output_is_one_line(argv, tmp_path) -> None:
    """stdout closed before the output is written (a pipe into head -0): one line, status 2,
    no traceback; best has written its files before its table."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "avrmp.cli",
                             *(str(out) if a == "OUT" else a for a in argv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 2
    assert err.startswith("avrmp: error: cannot write the output:") and "Traceback" not in err, err
    assert argv[0] != "best" or len(list(out.glob("*.[Sh]"))) == 2


@pytest.mark.parametrize("argv", [["list"], ["gen", "add", "--bits", "32", "-o", "OUT"]])
def test_a_standard_output_closed_from_the_start_is_one_line(argv, tmp_path) -> None:
    """Started with stdout closed (`avrmp list >&-`): Python has no sys.stdout at all."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "avrmp.cli", *(str(out) if a == "OUT" else a for a in argv)]
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *command], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "avrmp: error: standard output is closed\n"
    assert not out.exists()


def test_a_path_that_is_not_utf8_is_printed_as_it_is(tmp_path) -> None:
    """A folder name of bytes that are not UTF-8, printed by a strict UTF-8 stdout: its bytes,
    not a UnicodeEncodeError after the files are written."""
    out = os.fsencode(tmp_path) + b"/\xfd"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    proc = subprocess.run([sys.executable, "-m", "avrmp.cli", "gen", "add", "--bits", "16",
                           "-o", out], capture_output=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(b"\n")[0] == out + b"/avrmp_add16_ripple.S"


def test_binary_input_is_refused_and_control_characters_escaped(tmp_path, capsys) -> None:
    blob = tmp_path / "blob.S"
    blob.write_bytes(b"\x7fELF\x01\x01\x00\x00\n")
    status, _, err = run(verify_args(blob), capsys)
    assert_one_error(status, err, "is a binary file, not assembly")
    assert "\x00" not in err
    odd = tmp_path / "\x1b[31mred.S"
    status, _, err = run(verify_args(odd), capsys)
    assert_one_error(status, err, "\\x1b[31mred.S")
    assert "\x1b" not in err


@pytest.mark.parametrize("argv, blocked", [
    (["best", "add", "--bits", "64"], "avrmp_add64_ripple.S"),
    (["best", "add", "--bits", "64", "--name", "f"], "f.h"),
    (["uecc", "--sizes", "4"], "avrmp_uecc.S"),
    (["bundle", "--sizes", "128"], "library.json"),
    (["bundle", "--sizes", "128"], "avrmp_sqr128.h"),
])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(argv, blocked, tmp_path,
                                                                          capsys,
                                                                          monkeypatch) -> None:
    import avrmp.cli
    import avrmp.library.bundle
    import avrmp.library.uecc

    monkeypatch.setattr(avrmp.cli, "pick", lambda *_, **__: pytest.fail("ran"))
    monkeypatch.setattr(avrmp.library.uecc, "choose", lambda *_, **__: pytest.fail("ran"))
    monkeypatch.setattr(avrmp.library.bundle, "choose", lambda *_, **__: pytest.fail("ran"))
    if argv[0] == "bundle":  # over an earlier bundle, its routines in src/
        (tmp_path / "README.md").write_text("Generated by avrmp")
        blocked = f"src/{blocked}" if blocked.endswith(".h") else blocked
    (tmp_path / blocked).mkdir(parents=True)
    status, out, err = run([*argv, "-o", tmp_path], capsys)
    assert_one_error(status, err, "is a directory")
    assert out == ""


def test_output_check_leaves_no_folder(tmp_path) -> None:
    require_writable(tmp_path / "a" / "b", folder=True)
    require_writable(tmp_path / "c" / "file.json")
    assert files_under(tmp_path) == []
    with pytest.raises(AvrmpError, match="is a directory"):
        require_writable(tmp_path)


def test_writing_through_links(tmp_path) -> None:
    """write_all writes through a link to a file, refuses a link to nothing before following it
    (it made the link's target and the folders above it) and names a directory as one."""
    target = tmp_path / "real.txt"
    target.write_text("old")
    (tmp_path / "link.txt").symlink_to(target)
    write_all({tmp_path / "link.txt": "new"})
    assert target.read_text() == "new" and (tmp_path / "link.txt").is_symlink()
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "gone" / "x.txt")
    with pytest.raises(AvrmpError, match="a link to nothing"):
        write_all({tmp_path / "dangling.txt": "x"})
    assert not (tmp_path / "gone").exists()
    (tmp_path / "to_dir").symlink_to(tmp_path / "gone_dir")
    (tmp_path / "gone_dir").mkdir()
    for path in (tmp_path / "gone_dir", tmp_path / "to_dir"):
        with pytest.raises(AvrmpError, match="is a directory"):
            write_all({path: "x"})


def test_gen_no_partial_pair(tmp_path, capsys) -> None:
    """If the .h cannot be written, the .S must not be left behind either."""
    out = tmp_path / "out"
    (out / "avrmp_mul64_product_scanning.h").mkdir(parents=True)  # the .h cannot replace a dir
    status, _, err = run(["gen", "mul", "--bits", "64", "-o", out], capsys)
    assert_one_error(status, err, "cannot write")
    assert [p.name for p in files_under(out)] == ["avrmp_mul64_product_scanning.h"]


def test_gen_output_files_follow_umask(tmp_path, capsys) -> None:
    old = os.umask(0o022)
    try:
        status, out, _ = run(["gen", "add", "--bits", "32", "-o", tmp_path], capsys)
    finally:
        os.umask(old)
    assert status == 0
    for name in out.split():
        assert stat.S_IMODE(Path(name).stat().st_mode) == 0o644, name


# ------------------------------------------------------------------ gen: drop-in output

DROP_IN = [
    (["mul", "--bits", "64"], "avrmp_mul64_product_scanning", "r, a, b"),
    (["sqr", "--bits", "96"], "avrmp_sqr96_product_scanning", "r, a"),
    (["mul", "--bits", "256", "--algo", "karatsuba"], "avrmp_mul256_karatsuba", "r, a, b"),
    (["mul", "--bits", "128", "--algo", "karatsuba", "--variant", "branched", "--name", "kmul"],
     "kmul", "r, a, b"),
    (["mul", "--bits", "160", "--algo", "rps"], "avrmp_mul_rps", "r, a, b, 20"),
    (["sub", "--bits", "128"], "avrmp_sub128_ripple", "r, a, b"),
    (["mul", "--bits", "64", "--mcu", "attiny85"], "avrmp_mul64_product_scanning", "r, a, b"),
]


@needs_toolchain
@pytest.mark.parametrize("args, sym, call", DROP_IN, ids=lambda x: x if isinstance(x, str) else "")
def test_gen_output_builds_with_avr_gcc(args, sym, call, tmp_path, capsys) -> None:
    mcu = args[args.index("--mcu") + 1] if "--mcu" in args else "atmega128"
    status, out, err = run(["gen", *args, "-o", tmp_path], capsys)
    assert status == 0, err
    asm, hdr = (Path(p) for p in out.split())
    assert asm == tmp_path / f"{sym}.S" and hdr == tmp_path / f"{sym}.h"
    main_c = tmp_path / "main.c"
    main_c.write_text(
        f'#include "{hdr.name}"\n'
        f'#include "{hdr.name}"  /* include guard */\n'
        "uint8_t r[64], a[32], b[32];\n"
        f"int main(void) {{ {sym}({call}); return r[0]; }}\n"
    )
    gcc = ["avr-gcc", f"-mmcu={mcu}", "-Os", "-Wall", "-Werror"]
    proc = subprocess.run([*gcc, "-c", main_c, "-o", tmp_path / "main.o"],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*gcc, "-c", asm, "-o", tmp_path / "r.o"], check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([*gcc, tmp_path / "main.o", tmp_path / "r.o", "-o", tmp_path / "x.elf"],
                          check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if shutil.which("avr-g++"):  # the header's extern "C" block
        main_cc = tmp_path / "main.cc"
        main_cc.write_text(main_c.read_text())
        proc = subprocess.run(["avr-g++", f"-mmcu={mcu}", "-Os", "-c", main_cc, "-o",
                               tmp_path / "mcc.o"], check=False, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        proc = subprocess.run([*gcc, tmp_path / "mcc.o", tmp_path / "r.o", "-o",
                               tmp_path / "y.elf"], check=False, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------ verify


def verify_args(file, symbol="m16", *extra) -> list:
    return ["verify", file, "--symbol", symbol, "--bits", "16", "--op", "mul", "--tests", "10",
            *extra]


@needs_toolchain
@pytest.mark.parametrize(
    "argv, needle",
    [
        (verify_args(ASM / "no_such.S"), "no_such.S"),
        (verify_args(ASM), "cannot read"),  # a directory
        (verify_args(ASM / "m16.S", "nothere"), "'nothere' not defined"),
        (verify_args(ASM / "syntax_error.S", "broken"), "syntax_error.S:5"),
        (verify_args(ASM / "m16.S", "m16", "--mcu", "atmega9999"), "atmega9999"),
        (verify_args(ASM / "m16.S", "m16", "--mcu", "attiny85"), "mul r18, r20"),
        (verify_args(ASM / "m16.S", "m16", "--tests", "-1"), "--tests"),
        (verify_args(ASM / "m16.S", "m16", "--seed", "-1"), "--seed"),
        (verify_args(ASM / "m16.S", "m16", "--variant", "fast"), "fast"),
        (verify_args(ASM / "arm" / "mul64.S", "mul64", "--target", "arm7tdmi", "--mcu",
                     "attiny85"), "--mcu does not apply"),
        (verify_args(ASM / "arm" / "mul64.S", "mul64", "--target", "arm7tdmi",
                     "--no-interrupts"), "--no-interrupts does not apply"),
        (["verify", ASM / "m16.S", "--symbol", "m16", "--bits", "12", "--op", "mul"], "--bits 12"),
        (["verify", ASM / "m16.S", "--symbol", "m16", "--bits", "0", "--op", "mul"], "--bits 0"),
        (["verify", ASM / "m16.S", "--symbol", "m16", "--bits", "16", "--op", "div"], "div"),
        (["verify", ASM / "m16.S", "--bits", "16", "--op", "mul"], "--symbol"),
    ],
    ids=lambda x: "" if isinstance(x, list) else x,
)
def test_verify_bad_input(argv, needle, tmp_path, capsys) -> None:
    report = tmp_path / "report.json"
    status, stdout, err = run([*argv, "--json", report], capsys)
    assert_one_error(status, err, needle)
    assert stdout == ""
    assert not report.exists()


@needs_toolchain
def test_verify_assembler_error_shows_the_line(capsys) -> None:
    status, _, err = run(verify_args(ASM / "syntax_error.S", "broken"), capsys)
    assert_one_error(status, err, "syntax_error.S:5", "`adiw r20, 1`")


@needs_toolchain
def test_verify_unreadable_file(tmp_path, capsys) -> None:
    src = tmp_path / "m16.S"
    shutil.copy(ASM / "m16.S", src)
    src.chmod(0)
    try:
        if os.access(src, os.R_OK):
            pytest.skip("running as root: permissions do not stop reading")
        status, _, err = run(verify_args(src), capsys)
        assert_one_error(status, err, "cannot read")
    finally:
        src.chmod(0o644)


@needs_toolchain
def test_verify_faulty_routine_names_first_failing_input(tmp_path, capsys) -> None:
    report = tmp_path / "r.json"
    status, stdout, err = run(verify_args(ASM / "faulty.S", "m16_wrong", "--json", report), capsys)
    assert status == 1
    assert stdout == ""
    assert "Traceback" not in err
    # m16_wrong drops the a1*b0 product: the first input with a1*b0 != 0 is the first failure
    first = next(i for i, (a, b) in enumerate(operand_sets(2, 2, 10))
                 if (a >> 8) * (b & 0xFF))
    a, b = list(operand_sets(2, 2, 10))[first]
    want = f"input #{first} ({a.to_bytes(2, 'little').hex()}, {b.to_bytes(2, 'little').hex()})"
    fail_line = [ln for ln in err.splitlines() if ln.startswith("avrmp: verification failed:")]
    assert len(fail_line) == 1 and want in fail_line[0] and "result" in fail_line[0], err
    data = json.loads(report.read_text())
    assert data["passed"] is False and want in data["failures"][0]


@needs_toolchain
@pytest.mark.parametrize("symbol, check", [("m16_clobber", "abi"), ("m16_branch", "timing"),
                                           ("m16_overflow", "writes"), ("m16_r1", "r1")])
def test_verify_other_faults_exit_1(symbol, check, capsys) -> None:
    status, _, err = run(verify_args(ASM / "faulty.S", symbol), capsys)
    assert status == 1
    assert check in err.splitlines()[-1]


@needs_toolchain
def test_verify_good_routine(tmp_path, capsys) -> None:
    report = tmp_path / "r.json"
    status, out, err = run(verify_args(ASM / "m16.S", "m16", "--json", report), capsys)
    assert status == 0 and err == ""
    assert out.startswith("PASS m16:") and "core 34 cycles" in out
    data = json.loads(report.read_text())
    assert data["passed"] is True and data["core_cycles"] == 34 and data["failures"] == []


@needs_toolchain
def test_verify_unwritable_json(tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status, _, err = run(verify_args(ASM / "m16.S", "m16", "--json", blocker / "r.json"), capsys)
    assert_one_error(status, err, "cannot write")


@needs_toolchain
@pytest.mark.parametrize("command", ["verify", "profile"])
def test_json_refuses_the_routine_itself(command, tmp_path, capsys) -> None:
    src = tmp_path / "m16.S"
    shutil.copy(ASM / "m16.S", src)
    argv = [command, src, "--symbol", "m16", "--bits", "16", "--op", "mul",
            "--json", tmp_path / "." / "m16.S"]
    status, _, err = run(argv, capsys)
    assert_one_error(status, err, "is the routine itself")
    assert src.read_text() == (ASM / "m16.S").read_text()


@pytest.mark.parametrize("command", ["verify", "profile"])
def test_avrasm2_source_is_refused_in_one_line(command, tmp_path, capsys) -> None:
    src = tmp_path / "m16.asm"
    src.write_text("; not GNU syntax\n")
    status, _, err = run([command, src, "--symbol", "m16", "--bits", "16", "--op", "mul"], capsys)
    assert_one_error(status, err, "avrasm2 source")


@needs_toolchain
def test_verify_takes_the_length_argument_from_the_spec_line(tmp_path, capsys) -> None:
    """An avrmp routine's spec line says whether it takes its length at run time: verify passes
    it without --len-arg, and refuses --len-arg for a routine of fixed length."""
    rps, _ = write_routine(generate(Spec("mul", 64, "rps")), tmp_path / "rps")
    status, out, _ = run(["verify", rps, "--symbol", rps.stem, "--bits", "64", "--op", "mul",
                          "--tests", "5"], capsys)
    assert status == 0 and out.startswith("PASS")
    fixed, _ = write_routine(generate(Spec("mul", 64, "product-scanning")), tmp_path / "ps")
    status, _, err = run(["verify", fixed, "--symbol", fixed.stem, "--bits", "64", "--op", "mul",
                          "--len-arg"], capsys)
    assert_one_error(status, err, "fixed length")


# ------------------------------------------------------------------ list, bench


def test_list_names_every_algorithm(capsys) -> None:
    status, out, err = run(["list"], capsys)
    assert status == 0 and err == ""
    avr, arm = out.split("--target arm7tdmi", 1)
    names = {ln for ln in avr.splitlines() if ln and " " not in ln}
    assert names == set(ALGORITHMS)
    names = {ln for ln in arm.splitlines()[1:] if ln and " " not in ln}
    assert names == set(ARM_ALGORITHMS)
    assert arm.count("variants: branchfree, consttime") == sum(
        "consttime" in a.variants for a in ARM_ALGORITHMS.values())
    block = avr.split("product-scanning\n", 1)[1].split("\n", 2)[1]
    assert block.startswith("    ops: mul") and "; --looped: mul, sqr" in block


def test_what_list_says_holds() -> None:
    """The limits `avrmp list` prints beside the sizes are the ones Spec and gen apply."""
    from avrmp.techniques.karatsuba.large import unbuilt_square_bits

    for a in ALGORITHMS.values():
        for op in a.looped_builders:
            Spec(op, 64, a.name, looped=True)
    Spec("mul", 72, "operand-caching", e=9)
    Spec("mul", 72, "operand-caching", e=8, looped=True)
    with pytest.raises(AvrmpError, match="looped operand-caching takes 1..8"):
        Spec("mul", 72, "operand-caching", e=9, looped=True)
    with pytest.raises(AvrmpError, match="choose at most 9"):
        Spec("mul", 72, "operand-caching", e=10)
    for bits in unbuilt_square_bits():
        with pytest.raises(AvrmpError, match=f"does not build .*{bits}"):
            generate(Spec("sqr", bits, "karatsuba"))
    with pytest.raises(AvrmpError, match="no sign to branch on"):
        generate(Spec("sqr", 64, "karatsuba", "branched"))


BENCH_FIELDS = {"op", "bits", "algo", "variant", "core_cycles", "abi_cycles", "code_bytes",
                "stack_bytes", "verified"}


@needs_toolchain
def test_bench_json(tmp_path, capsys) -> None:
    path = tmp_path / "sub" / "bench.json"
    md = tmp_path / "bench.md"
    status, out, err = run(["bench", "--algos", "karatsuba,ripple", "--ops", "mul,add", "--bits",
                            "64,128", "--tests", "5", "--json", path, "--markdown", md], capsys)
    assert status == 0, err
    rows = json.loads(path.read_text())
    for row in rows:
        assert BENCH_FIELDS <= row.keys()
        assert row["verified"] is True
        assert row["core_cycles"] > 0 and row["abi_cycles"] > row["core_cycles"]
        assert row["code_bytes"] > 0 and row["stack_bytes"] >= 0
    got = [(r["op"], r["bits"], r["algo"], r["variant"]) for r in rows]
    # karatsuba 64, 128 x (branchfree, branched); ripple add at both sizes (--bits overrides its
    # catalog sizes); nothing outside the filters
    assert {
        ("mul", 64, "karatsuba", "branchfree"), ("mul", 64, "karatsuba", "branched"),
        ("mul", 128, "karatsuba", "branchfree"), ("mul", 128, "karatsuba", "branched"),
        ("add", 64, "ripple", "branchfree"), ("add", 128, "ripple", "branchfree"),
    } <= set(got)
    assert {(op, bits, algo) for op, bits, algo, _ in got} <= {
        (op, bits, algo) for op in ("mul", "add") for bits in (64, 128)
        for algo in ("karatsuba", "ripple")
    }
    assert md.read_text() == out


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--algos", "frob"], "frob"),
        (["--bits", "12"], "matches no routine"),
        (["--bits", "x"], "--bits"),
        (["--bits", ""], "names nothing"),  # not every size
        (["--ops", ","], "names nothing"),
        (["--bits", "128,,256"], "has an empty item"),  # not quietly 128,256
        (["--algos", "hybrid", "--e", "4"], "takes none of --e"),  # not left out quietly
        (["--ops", "add", "--mcu", "atmega9999"], "atmega9999"),
        (["--ops", "add", "--bits", "128", "--tests", "-3"], "--tests"),
        (["--target", "arm7tdmi", "--ops", "sqr"], "not --ops"),
        (["--target", "arm7tdmi", "--mcu", "attiny85"], "not --mcu"),
        (["--target", "arm7tdmi", "--algos", "hybrid", "--bits", "96"], "matches no ARM7TDMI"),
        (["--target", "host64", "--bits", "64"], "not --bits"),
        (["--target", "host64", "--tests", "3"], "not --tests"),
        (["--repr", "radix64"], "--repr applies to --target host64 only"),  # not the AVR catalog
        (["--markdown", ""], "empty path"),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else "",
)
def test_bench_bad_input(args, needle, tmp_path, capsys) -> None:
    path = tmp_path / "bench.json"
    status, _, err = run(["bench", *args, "--json", path], capsys)
    assert_one_error(status, err, needle)
    assert not path.exists()


@needs_toolchain
def test_bench_parameter_sweep(tmp_path, capsys) -> None:
    """--e runs operand caching once per e (unrolled and looped where the loop takes that e);
    the rows name their parameters (a routine without e is left out, or refused if --algos
    names it)."""
    path = tmp_path / "bench.json"
    status, _, err = run(["bench", "--algos", "operand-caching", "--ops", "mul",
                          "--bits", "160", "--e", "4,10", "--tests", "3", "--json", path], capsys)
    assert status == 0, err
    got = sorted(r["params"] for r in json.loads(path.read_text()))
    assert got == ["e=10", "e=4", "e=4 looped=True"]  # the loop holds at most 8 bytes


def test_looped_e_out_of_range_is_a_spec_error() -> None:
    with pytest.raises(AvrmpError, match="--e 9: looped operand-caching takes 1..8"):
        Spec("mul", 160, "operand-caching", e=9, looped=True)


@needs_toolchain
@pytest.mark.parametrize("flag", ["--json", "--markdown", "--plot"])
def test_bench_unwritable_output(flag, tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status, _, err = run(["bench", "--algos", "ripple", "--ops", "add", "--bits", "128",
                          "--tests", "1", flag, blocker / "out.png"], capsys)
    assert_one_error(status, err, "cannot write")


# ------------------------------------------------------------------ missing toolchain, subprocess


def _cli(args: list, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "avrmp.cli", *map(str, args)],
                          check=False, capture_output=True, text=True, env=env)


def test_missing_avr_gcc(tmp_path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # nothing on PATH: no avr-gcc
    proc = _cli(verify_args(ASM / "m16.S"), env)
    assert_one_error(proc.returncode, proc.stderr, "avr-gcc not found", "apt-get install")
    assert proc.stdout == ""
    proc = _cli(["bench", "--algos", "ripple", "--ops", "add", "--bits", "128", "--tests", "1",
                 "--json", tmp_path / "b.json"], env)
    assert_one_error(proc.returncode, proc.stderr, "avr-gcc not found")
    assert not (tmp_path / "b.json").exists()
    # gen needs no toolchain
    proc = _cli(["gen", "mul", "--bits", "16", "-o", tmp_path / "out"], env)
    assert proc.returncode == 0, proc.stderr


def test_subprocess_error_is_one_line() -> None:
    proc = _cli(["gen", "mul", "--bits", "12", "-o", "/nonexistent/never"])
    assert_one_error(proc.returncode, proc.stderr, "--bits 12")
    proc = _cli(["gen", "mul", "--bits", "16", "--levels", "x", "-o", "/nonexistent/never"])
    assert_one_error(proc.returncode, proc.stderr, "--levels")
    proc = _cli([])
    assert_one_error(proc.returncode, proc.stderr)


def test_gen_says_when_it_searches(tmp_path, capsys, monkeypatch) -> None:
    """A search that outlasts SLOW_NOTICE_AFTER on a terminal, LOG_EVERY in a log, says so; a
    routine from the tuned table prints nothing there."""
    import avrmp.cli
    import avrmp.progress

    search = ["gen", "mul", "--bits", "24", "--algo", "karatsuba", "--tune", "-o", tmp_path]
    status, _, err = run(search, capsys)
    assert status == 0 and err == ""  # in a log, within LOG_EVERY
    monkeypatch.setattr(avrmp.progress, "LOG_EVERY", 0.0)
    status, _, err = run(search, capsys)
    assert status == 0 and "searching the choices for avrmp_mul24_karatsuba" in err
    monkeypatch.setattr(avrmp.progress, "LOG_EVERY", 60.0)
    monkeypatch.setattr(avrmp.cli, "SLOW_NOTICE_AFTER", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    status, _, err = run(search, capsys)
    assert status == 0 and "searching the choices for avrmp_mul24_karatsuba" in err
    status, _, err = run(["gen", "mul", "--bits", "256", "--algo", "karatsuba", "-o", tmp_path],
                         capsys)
    assert status == 0 and err == ""


def test_rebuild_verifies_before_it_writes(tmp_path, capsys, monkeypatch) -> None:
    """Choices edited within their options can still make wrong code (a builder trusts a recorded
    value as it trusts its own search's): rebuild runs the test load first and writes nothing
    that fails it."""
    status, out, _ = run(["gen", "mul", "--bits", "64", "-o", tmp_path / "a"], capsys)
    asm = Path(out.split()[0])

    def miscompiled(path: Path):
        routine = rebuild(path)
        assert "\tadc " in routine.asm
        return dataclasses.replace(routine, asm=routine.asm.replace("\tadc ", "\tadd ", 1))

    monkeypatch.setattr("avrmp.cli.rebuild", miscompiled)
    status, _, err = run(["rebuild", asm, "-o", tmp_path / "b"], capsys)
    assert_one_error(status, err, "fails verification", "nothing written")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("old, new", [(";   e: 10", ";   e: -1"), (";   e: 10", ";   e: 3"),
                                      ('"Z", "X"], "b"]', '"Z", "X"], "q"]')],
                         ids=["negative e", "e not searched", "unknown layout"])
def test_rebuild_refuses_a_choice_no_search_offers(old, new, tmp_path, capsys) -> None:
    status, out, _ = run(["gen", "mul", "--bits", "128", "--algo", "operand-caching", "-o",
                          tmp_path / "a"], capsys)
    asm = Path(out.split()[0])
    assert old in asm.read_text()
    asm.write_text(asm.read_text().replace(old, new))
    status, _, err = run(["rebuild", asm, "-o", tmp_path / "b"], capsys)
    assert_one_error(status, err, "is not one of its options")
    assert not (tmp_path / "b").exists()


def test_rebuild_says_when_the_simulator_cannot_verify(tmp_path, capsys) -> None:
    status, out, _ = run(["gen", "mul", "--bits", "64", "--mcu", "atxmega128a1", "-o",
                          tmp_path / "a"], capsys)
    status, out, _ = run(["rebuild", Path(out.split()[0]), "-o", tmp_path / "b"], capsys)
    assert status == 0 and "not verified: simavr cannot simulate atxmega128a1" in out


@pytest.mark.parametrize("given, needle", [(["--bits", "128"], "give --bits 64"),
                                           (["--op", "sqr"], "give --op mul"),
                                           (["--variant", "branched"], "give --variant branchfree")])
def test_verify_refuses_arguments_its_spec_line_contradicts(given, needle, tmp_path,
                                                            capsys) -> None:
    """A run with the wrong size, operation or timing discipline would report failures of the
    arguments, not of the routine."""
    status, out, _ = run(["gen", "mul", "--bits", "64", "-o", tmp_path], capsys)
    asm = Path(out.split()[0])
    args = {"--bits": "64", "--op": "mul", **dict(zip(given[::2], given[1::2]))}
    status, _, err = run(["verify", asm, "--symbol", asm.stem,
                          *[x for kv in args.items() for x in kv]], capsys)
    assert_one_error(status, err, needle)


def test_verify_refuses_a_part_with_another_return_address(tmp_path, capsys) -> None:
    """A large Karatsuba routine's calls depend on the return address's size; a routine without
    calls runs the same on every part with MUL."""
    for bits, mcu, ok in (("512", "atmega2560", False), ("512", "atmega1284p", True),
                          ("64", "atmega2560", True)):
        status, out, _ = run(["gen", "mul", "--bits", bits, "--algo", "karatsuba", "-o",
                              tmp_path], capsys)
        asm = Path(out.split()[0])
        status, out, err = run(["verify", asm, "--symbol", asm.stem, "--bits", bits, "--op",
                                "mul", "--mcu", mcu, "--tests", "10", "--no-interrupts"], capsys)
        if ok:
            assert status == 0 and out.startswith("PASS"), err
        else:
            assert_one_error(status, err, "2-byte return address of atmega128", "--mcu atmega128")


@needs_toolchain
def test_sigterm_leaves_no_temporary_folder(tmp_path) -> None:
    """SIGTERM ends a run as Ctrl-C does: one line, status 143, its temporary folder gone."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "avrmp.cli", "verify", ASM / "m16.S",
                             "--symbol", "m16", "--bits", "16", "--op", "mul", "--tests",
                             "1000000"],
                            env=dict(os.environ, TMPDIR=str(temp)), stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while not any(temp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # into the simulation
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err == "avrmp: terminated\n", err
    assert list(temp.iterdir()) == []


def test_sighup_ends_a_run_as_sigterm_does(tmp_path) -> None:
    """A closed terminal (SIGHUP): one line, status 129, no output and no temporary folder left."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "avrmp.cli", "gen", "mul", "--bits", "2048",
                             "--algo", "karatsuba", "--tune", "-o", out],
                            env=dict(os.environ, TMPDIR=str(temp)), stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    time.sleep(3)  # past the imports, into the search
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 129 and err.endswith("avrmp: hung up\n"), err
    assert list(temp.iterdir()) == [] and files_under(out) == []
    # under nohup (SIGHUP ignored) the run goes on; SIGTERM still ends it
    proc = subprocess.Popen(["nohup", sys.executable, "-m", "avrmp.cli", "gen", "mul", "--bits",
                             "2048", "--algo", "karatsuba", "--tune", "-o", out],
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.endswith("avrmp: terminated\n"), err


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="--jobs 2 needs two cores")
def test_sigterm_stops_tunes_workers(tmp_path) -> None:
    """tune --jobs: the parent ends at once, its workers with it, each without a traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "avrmp.cli", "tune", "--catalog", "--missing",
                             "--jobs", "2", "--table", tmp_path / "t.json"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    children: list[int] = []
    while len(children) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        found = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True,
                               check=False)
        children = [int(x) for x in found.stdout.split()]
    assert len(children) == 2
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and err == "avrmp: terminated\n", err
    time.sleep(0.5)
    assert not [pid for pid in children if running(pid)]
    table = tmp_path / "t.json"  # what the workers found before: kept whole
    assert not table.exists() or isinstance(json.loads(table.read_text()), dict)


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_avr_routine_is_not_run_as_arm(tmp_path, capsys) -> None:
    status, out, _ = run(["gen", "mul", "--bits", "64", "-o", tmp_path], capsys)
    asm = Path(out.split()[0])
    status, _, err = run(["verify", asm, "--target", "arm7tdmi", "--symbol", asm.stem, "--bits",
                          "64", "--op", "mul"], capsys)
    assert_one_error(status, err, "is an AVR routine", "without --target arm7tdmi")


@pytest.mark.parametrize("bits, needle", [("40", "multiple of 32"), ("8", "32 to 2048"),
                                          ("4096", "32 to 2048")])
def test_verify_takes_only_lengths_a_run_time_length_routine_takes(bits, needle, tmp_path,
                                                                   capsys) -> None:
    """An RPS routine's length is an argument; --bits outside what it takes (the header calls
    it undefined) is refused, not reported as a failure of the routine."""
    status, out, _ = run(["gen", "mul", "--algo", "rps", "-o", tmp_path], capsys)
    asm = Path(out.split()[0])
    for command in ("verify", "profile"):
        status, _, err = run([command, asm, "--symbol", asm.stem, "--op", "mul", "--bits", bits],
                             capsys)
        assert_one_error(status, err, f"--bits {bits}", needle)


@pytest.mark.parametrize("signal_raised, status, line", [
    (KeyboardInterrupt, 130, "avrmp: interrupted\n"),
    ("SIGTERM", 143, "avrmp: terminated\n"),
    ("native", 143, "avrmp: terminated\n"),
])
def test_a_signal_while_the_modules_load_ends_in_one_line(signal_raised, status, line,
                                                          monkeypatch, capsys) -> None:
    """Ctrl-C or SIGTERM before cli is imported (its modules take a moment) ends the command as
    later: one line and the status, no traceback; also where a native module that was loading
    (ortools) turns the stop into an ImportError."""
    import builtins

    from avrmp import entry
    from avrmp.errors import Terminated

    real_import = builtins.__import__

    def import_interrupted(name, *args, **kwargs):
        if name == "cli":  # entry's `from .cli import main`
            if signal_raised == "SIGTERM":
                os.kill(os.getpid(), signal.SIGTERM)  # handled by entry's handler
            if signal_raised == "native":
                raise ImportError("initialization failed") from Terminated()
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    previous = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(builtins, "__import__", import_interrupted)
    try:
        assert entry.run() == status
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert capsys.readouterr().err == line


@pytest.mark.parametrize("spec, mcu, needle", [
    (Spec("mul", 768, "product-scanning", looped=True, mcu="attiny85"), "attiny85",
     "more than attiny85's 512: give --mcu atmega328p"),
    (Spec("mul", 64, "karatsuba"), "attiny85", "MUL, which attiny85 lacks: give --mcu atmega128"),
    (Spec("mul", 64, "karatsuba"), None, "is a C header, not assembly"),
])
def test_verify_names_the_part_or_file_to_give(spec, mcu, needle, tmp_path, capsys) -> None:
    """A part too small for the test load (a roomier one that runs the same code is named),
    a part without the MUL the routine uses, and the .h given for the .S."""
    asm, header = write_routine(generate(spec), tmp_path)
    for command in ("verify", "profile"):
        status, _, err = run([command, asm if mcu else header, "--symbol", spec.symbol,
                              "--bits", spec.bits, "--op", "mul",
                              *(["--mcu", mcu] if mcu else [])], capsys)
        assert_one_error(status, err, needle)
    if "give --mcu atmega328p" in needle:  # and the part named runs it
        status, out, _ = run(["profile", asm, "--symbol", spec.symbol, "--bits", spec.bits,
                              "--op", "mul", "--mcu", "atmega328p"], capsys)
        assert status == 0 and "core" in out


def test_python_dash_m_avrmp_is_the_command(tmp_path) -> None:
    """`python -m avrmp` runs the command through the same entry (its status, its one-line
    errors)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    ok = subprocess.run([sys.executable, "-m", "avrmp", "--version"], capture_output=True,
                        text=True, cwd=tmp_path, env=env, check=False)
    assert ok.returncode == 0 and ok.stdout.startswith("avrmp ")
    bad = subprocess.run([sys.executable, "-m", "avrmp", "gen", "mul", "--bits", "x"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--bits" in bad.stderr


@needs_toolchain
def test_a_file_named_like_an_option_is_verified(tmp_path, monkeypatch, capsys) -> None:
    """./-d.S reaches avr-gcc as a path, not as the option -d (Path drops the ./)."""
    shutil.copy(ASM / "m16.S", tmp_path / "-d.S")
    monkeypatch.chdir(tmp_path)
    status, out, err = run(verify_args("./-d.S"), capsys)
    assert status == 0 and out.startswith("PASS"), err


def test_an_output_folder_linked_to_nothing_is_named(tmp_path, capsys) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    status, _, err = run(["gen", "mul", "--bits", "64", "-o", tmp_path / "out"], capsys)
    assert_one_error(status, err, "is a link to nothing")
    assert not (tmp_path / "gone").exists()


@needs_toolchain
def test_tools_keep_their_temporary_files_in_a_folder_removed_at_the_end(capsys,
                                                                        monkeypatch) -> None:
    """avr-gcc stopped by a SIGTERM to avrmp alone (subprocess kills it) leaves its ccXXXX files
    behind: they are in a folder of avrmp's own, which goes when the command ends."""
    folders = []
    real_run = subprocess.run

    def spy(*args, **kwargs):
        folder = Path(os.environ["TMPDIR"])
        folders.append(folder)
        (folder / "ccLEFT.s").write_text("")  # what a killed avr-gcc leaves
        return real_run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    status, _, err = run(verify_args(ASM / "m16.S"), capsys)
    assert status == 0, err
    assert folders and not any(f.exists() for f in folders)
    assert os.environ.get("TMPDIR") != str(folders[0])


def test_an_arm_routine_is_not_named_as_a_c_library_function(tmp_path, capsys) -> None:
    """memcpy for the ARM7TDMI: a program that includes <string.h> could not declare it."""
    probe = subprocess.run(["arm-none-eabi-gcc", "-fsyntax-only", "-x", "c", "-"],
                           input="#include <string.h>\n", capture_output=True, text=True,
                           check=False) if shutil.which("arm-none-eabi-gcc") else None
    if probe is None or probe.returncode:
        pytest.skip("arm-none-eabi-gcc with newlib is not installed")
    base = ["gen", "mul", "--target", "arm7tdmi", "--bits", "64", "-o", tmp_path, "--name"]
    status, _, err = run([*base, "memcpy"], capsys)
    assert_one_error(status, err, "a program for the ARM7TDMI", "could not declare it")
    assert run([*base, "mul64"], capsys)[0] == 0
