"""The library bundle: avrmp bundle writes an Arduino / PlatformIO library folder whose routines are
verified and whose example, built with the Arduino IDE's flags (-Os, -flto, -ffunction-sections,
-fdata-sections, --gc-sections) for the Uno, the Mega and the ATtiny85, prints the right product
in simavr; routines for parts with 3-byte return addresses are selected by the preprocessor; bad
input is one line and status 2, and nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from avrmp.bench.pick import fastest
from avrmp.library.arduino_build import build_example
from avrmp.library.bundle import FAMILIES, Entry, choose, earlier_routines, library_files, readme
from avrmp.library.sketch import example_operands
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.verify.checks import verify_file
from avrmp.verify.serial import run_serial

ROUTINES = [f"avrmp_{op}{bits}" for bits in (128, 256) for op in ("mul", "sqr", "add", "sub")]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("bundle") / "avrmp"
    status, text, err = avrmp("bundle", "--sizes", "128,256", "--tests", "50", "--seed", "3",
                              "-o", str(out))
    assert status == 0, err
    return out, text


def avrmp(*argv: str) -> tuple[int, str, str]:
    """The command in a process of its own (a module-wide fixture cannot capture in-process)."""
    proc = subprocess.run([sys.executable, "-m", "avrmp.cli", *argv], capture_output=True,
                          text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_library_layout(bundle) -> None:
    out, _ = bundle
    props = dict(line.split("=", 1) for line in (out / "library.properties").read_text().split(
        "\n") if line)
    assert props["name"] == "avrmp" and props["architectures"] == "avr"
    assert props["includes"] == "avrmp.h"
    meta = json.loads((out / "library.json").read_text())
    assert meta["name"] == "avrmp" and "atmelavr" in meta["platforms"]
    umbrella = (out / "src" / "avrmp.h").read_text()
    for name in ROUTINES:
        assert (out / "src" / f"{name}.S").is_file()
        assert f'#include "{name}.h"' in umbrella
    assert (out / "examples" / "multiply" / "multiply.ino").is_file()


def test_readme_measures_every_routine_on_two_parts(bundle) -> None:
    out, _ = bundle
    text = (out / "README.md").read_text()
    assert "atmega128 cycles" in text and "atmega328p cycles" in text
    for name in ROUTINES:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}`"))
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert all(c.isdigit() for c in cells[2:]), row  # bytes, cycles and stack on both parts
    assert "a * b = " in text  # the example's output in simavr


@pytest.mark.parametrize("board", ["uno", "mega"])
def test_example_runs_and_links_only_what_it_calls(bundle, board, tmp_path) -> None:
    out, _ = bundle
    elf = build_example(out, out / "examples" / "multiply" / "multiply.ino", board, tmp_path)
    lines = run_serial(elf, {"uno": "atmega328p", "mega": "atmega2560"}[board])
    a, b = example_operands(256)
    assert f"a * b = {a * b:0128x}" in lines
    cycles = int(next(ln for ln in lines if ln.startswith("cycles = ")).split()[-1])
    # The 256-bit routine's whole call as the bundle measured it on the ATmega128, plus the
    # example's timer reads (6 cycles; 8 with the ATmega2560's 3-byte return address).
    row = next(line for line in (out / "README.md").read_text().splitlines()
               if line.startswith("| `avrmp_mul256`"))
    abi = int(row.split("|")[4])
    assert abi <= cycles <= abi + 12, (cycles, abi)
    symbols = subprocess.run(["avr-nm", str(elf)], capture_output=True, text=True,
                             check=True).stdout
    assert "avrmp_mul256" in symbols
    assert "avrmp_sqr256" not in symbols and "avrmp_mul128" not in symbols  # --gc-sections


def test_family_without_mul_builds_for_the_attiny85(tmp_path) -> None:
    out = tmp_path / "tiny"
    status, text, err = avrmp("bundle", "--family", "nomul", "--sizes", "128", "--max-flash",
                              "1200", "--tests", "20", "-o", str(out))
    assert status == 0, err
    assert "example on attiny85: (built" in text
    readme = (out / "README.md").read_text()
    assert "attiny85 cycles" in readme and "without the hardware multiplier" in readme


@pytest.mark.parametrize(("op", "twin"), [("mul", True), ("sqr", False)])
def test_three_byte_return_addresses_get_their_own_build(tmp_path, op, twin) -> None:
    """A 512-bit Karatsuba routine calls subroutines.  The multiplication's leaf reads a frame
    its caller reserved, across the return address: the ATmega2560 needs its own build, and the
    one .S serves both kinds of part.  The squaring's leaf has no frame, so one build serves
    both."""
    entry = choose(op, 512, FAMILIES["mul"], branched=False, max_flash=None)
    assert (entry.twin is not None) == twin
    assert ("__AVR_3_BYTE_PC__" in entry.asm()) == twin
    asm = tmp_path / f"{entry.symbol}.S"
    asm.write_text(entry.asm())
    for mcu in ("atmega128", "atmega2560"):
        report = verify_file(asm, entry.symbol, op, 64, mcu, "branchfree", 30,
                             tmp_path / mcu, seed=5)
        assert report.passed, report.first_failure()


def test_a_routine_with_jmp_assembles_to_nothing_on_a_part_without_it(tmp_path) -> None:
    """The 384-bit multiplication jumps by JMP: on an 8 KB part (ATmega88, which has MUL) its
    .S assembles to nothing, so that the IDE, which builds every .S of the library, still
    builds a sketch of the other sizes there; on the ATmega328P it is there."""
    entry = choose("mul", 384, FAMILIES["mul"], branched=False, max_flash=None)
    assert entry.routine.uses_jmp_call
    asm = tmp_path / f"{entry.symbol}.S"
    asm.write_text(entry.asm())
    for mcu, present in (("atmega88", False), ("atmega328p", True)):
        obj = tmp_path / f"{mcu}.o"
        subprocess.run(["avr-gcc", f"-mmcu={mcu}", "-c", str(asm), "-o", str(obj)], check=True)
        nm = subprocess.run(["avr-nm", str(obj)], capture_output=True, text=True, check=True)
        assert (entry.symbol in nm.stdout) == present, mcu


def test_a_tight_budget_picks_no_routine_that_takes_a_length() -> None:
    """Under 1000 bytes at 256 bits the fastest is rps, whose length is an argument that the
    bundle's signatures do not pass: the bundle takes the fastest looped routine instead."""
    assert fastest("mul", 256, "atmega128", max_flash=1000, progress=False).spec.algo == "rps"
    entry = choose("mul", 256, FAMILIES["mul"], branched=False, max_flash=1000)
    spec = entry.routine.spec
    assert not spec.runtime_length and spec.looped, entry.label


@pytest.mark.parametrize("args, message", [
    (["--sizes", "0"], "not a positive multiple of 8"),
    (["--sizes", "100"], "not a positive multiple of 8"),
    (["--family", "x"], "invalid choice"),
    (["--family", "nomul", "--sizes", "2048"], "do not fit attiny85's SRAM"),
    (["--tests", "0"], "choose 1 to"),
    (["--sizes", "128", "--max-flash", "20"], "relax the budget"),
])
def test_bad_input(tmp_path, args, message) -> None:
    status, _, err = avrmp("bundle", *args, "-o", str(tmp_path / "b"))
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "b").exists()


def test_a_folder_of_other_files_is_refused(tmp_path) -> None:
    """A bundle replaces README.md and the rest: into a folder that is not empty and not an
    earlier bundle's it writes nothing (before any work)."""
    out = tmp_path / "project"
    out.mkdir()
    (out / "README.md").write_text("# my project\n")
    status, _, err = avrmp("bundle", "--sizes", "32", "-o", str(out))
    assert status == 2 and "neither empty nor an earlier avrmp bundle" in err
    assert (out / "README.md").read_text() == "# my project\n"
    assert sorted(p.name for p in out.iterdir()) == ["README.md"]


def test_an_earlier_bundles_routines_are_found(tmp_path) -> None:
    """Writing a bundle over an earlier one removes the routines it no longer has (the IDEs
    would build every .S in src/), never a file avrmp did not write."""
    src = tmp_path / "src"
    src.mkdir()
    generated = "; avrmp_mul128: ...\n; Generated by avrmp 0.1.0; do not edit\n"
    for name in ("avrmp_mul128.S", "avrmp_mul128.h", "avrmp_mul256.S"):
        (src / name).write_text(generated)
    (src / "avrmp_mul512.S").write_text("; my own routine\n")
    (src / "avrmp.h").write_text(generated)
    files = {"src/avrmp_mul256.S": "", "src/avrmp.h": ""}
    assert [p.name for p in earlier_routines(tmp_path, files)] == ["avrmp_mul128.S",
                                                                  "avrmp_mul128.h"]
    assert earlier_routines(tmp_path / "nothing here", files) == []


def test_a_part_whose_sram_cannot_hold_the_stack_is_not_run(tmp_path, monkeypatch) -> None:
    """The 2048-bit multiplication's operands and result fit the ATmega328P's 2 KB, its stack
    (some 1.2 KB) does not: its README cell says "does not fit" instead of the bundle failing
    verification there after minutes of work."""
    from avrmp.library import bundle

    ran = []

    def verified(asm, symbol, op, nbytes, part, *_, **__):
        ran.append(part)
        return SimpleNamespace(passed=True)

    monkeypatch.setattr(bundle, "verify_file", verified)
    entry = bundle.Entry(generate(Spec("mul", 2048, "karatsuba", name="avrmp_mul2048")), "k")
    bundle.verify_entry(entry, tmp_path, FAMILIES["mul"], 5, 1, tmp_path)
    assert ran == ["atmega128"] and list(entry.reports) == ["atmega128"]


def test_a_readme_says_whether_its_boards_print() -> None:
    """The no-MUL family's board has no serial port: its README does not promise output."""
    mul = readme([], FAMILIES["mul"], "mul", "avrmp bundle", {})
    nomul = readme([], FAMILIES["nomul"], "nomul", "avrmp bundle", {})
    assert "prints the product and the cycles over the serial port" in mul
    assert "These boards have none" in nomul and "over the serial port" not in nomul


def test_the_url_goes_into_the_metadata(tmp_path) -> None:
    out = tmp_path / "b"
    status, _, err = avrmp("bundle", "--sizes", "32", "--tests", "5", "--url",
                           "https://example.org/avrmp", "-o", str(out))
    assert status == 0, err
    assert "url=https://example.org/avrmp\n" in (out / "library.properties").read_text()
    assert json.loads((out / "library.json").read_text())["homepage"] == \
        "https://example.org/avrmp"
    status, _, err = avrmp("bundle", "--url", "example.org", "-o", str(tmp_path / "c"))
    assert status == 2 and "http:// or https://" in err


def test_a_path_with_a_comment_end_stays_in_the_header_comment() -> None:
    """avrmp.h repeats the command line in a C comment: a */ in a path must not end it."""
    entry = Entry(generate(Spec("mul", 32, "product-scanning", name="avrmp_mul32")), "ps")
    files = library_files([entry], "avrmp", "avrmp bundle -o 'odd*/lib'", "")
    first = files["src/avrmp.h"].splitlines()[0]
    assert first.startswith("/*") and first.endswith("*/") and first.count("*/") == 1, first
