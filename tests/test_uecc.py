"""The micro-ecc drop-in: avrmp uecc writes one .S whose uECC_vli_mult and uECC_vli_square,
called from C with micro-ecc's own signatures (tests/c/uecc_harness.c), give the right product
for every curve size and for any other word count; on a part without MUL too; bad input is one
line and status 2."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from cli_run import run

from avrmp.cli import main
from avrmp.library.uecc import DROP_IN_FILE, UECC_SIZES
from avrmp.verify.serial import run_serial

HARNESS = Path(__file__).parent / "c" / "uecc_harness.c"
FALLBACK_WORDS = (1, 2, 13, 40)


def uecc(capsys, *args: str) -> tuple[int, str, str]:
    return run(["uecc", *args], capsys)


@pytest.fixture(scope="module")
def drop_in(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("uecc")
    assert main(["uecc", "--mcu", "atmega1284p", "--tests", "100", "--seed", "1",
                 "-o", str(out)]) == 0
    return out / DROP_IN_FILE


def records(rng: random.Random) -> list[tuple[int, int, int]]:
    """(words, left, right): per size, the largest operands and random ones."""
    out = []
    for words in (*UECC_SIZES, *FALLBACK_WORDS):
        top = (1 << 8 * words) - 1
        out.append((words, top, top))
        out += [(words, rng.getrandbits(8 * words), rng.getrandbits(8 * words))
                for _ in range(3)]
    return out


def inputs_header(cases: list[tuple[int, int, int]]) -> str:
    data = []
    for words, a, b in cases:
        data += [words, *a.to_bytes(words, "little"), *b.to_bytes(words, "little")]
    body = ",".join(map(str, data + [0]))
    return f"const uint8_t INPUTS[] PROGMEM = {{{body}}};\n"


def printed(lines: list[str]) -> list[tuple[str, int]]:
    """(tag, value) per printed number, continuation lines joined."""
    out: list[list[str]] = []
    for line in lines:
        if line.startswith("+"):
            out[-1][1] += line[1:]
        elif line != "E":
            tag, digits = line.split(" ")
            out.append([tag, digits])
    return [(tag, int(digits, 16)) for tag, digits in out]


def test_c_harness_with_micro_ecc_signatures(drop_in, tmp_path) -> None:
    cases = records(random.Random(2026))
    (tmp_path / "uecc_inputs.h").write_text(inputs_header(cases))
    elf = tmp_path / "harness.elf"
    subprocess.run(["avr-gcc", "-Os", "-mmcu=atmega1284p", f"-I{tmp_path}", str(HARNESS),
                    str(drop_in), "-o", str(elf)], check=True)
    lines = run_serial(elf, "atmega1284p")
    assert lines[-1] == "E", "the harness did not finish"
    expected = [x for _, a, b in cases for x in (("M", a * b), ("S", a * a))]
    assert printed(lines) == expected


def test_header_lists_the_flags_and_routines(drop_in) -> None:
    head = drop_in.read_text().split("\n\n")[0]
    assert "-Dasm_mult=1 -Dasm_square=1" in head
    for words in UECC_SIZES:
        assert f"avrmp_uecc_mul{8 * words}" in head and f"avrmp_uecc_sqr{8 * words}" in head


def test_without_mul_under_a_flash_budget(tmp_path, capsys) -> None:
    status, out, _ = uecc(capsys, "--mcu", "attiny85", "--sizes", "20", "--max-flash", "600",
                          "--tests", "50", "-o", str(tmp_path))
    assert status == 0, out
    head = (tmp_path / DROP_IN_FILE).read_text().split("\n\n")[0]
    assert "looped" in head
    assert "uECC_vli_square     20" in out


def test_sizes_that_share_a_routine_taking_the_length_hold_one_copy(tmp_path, capsys) -> None:
    """Under 700 bytes the picker takes rps at 24 and 32 words: one routine serves both (the
    dispatcher passes the count as rps's length), not a byte-identical copy for each."""
    status, out, _ = uecc(capsys, "--mcu", "atmega328p", "--sizes", "24,32", "--max-flash",
                          "700", "--tests", "20", "-o", str(tmp_path))
    assert status == 0, out
    text = (tmp_path / DROP_IN_FILE).read_text()
    head = text.split("\n\n")[0]
    assert head.count("avrmp_uecc_mul_rps") == 2 and head.count("avrmp_uecc_sqr_rps") == 2
    assert text.count("\navrmp_uecc_mul_rps:") == 1 and text.count("\navrmp_uecc_sqr_rps:") == 1


def test_verify_holds_each_routine_to_its_own_spec_line(drop_in, capsys) -> None:
    """The drop-in holds a spec line per routine: verify checks --bits, --op and --variant
    against the line that names --symbol, as for a file of one routine."""
    symbol = f"avrmp_uecc_mul{8 * UECC_SIZES[0]}"
    base = ["verify", str(drop_in), "--symbol", symbol, "--tests", "3"]
    status, _, err = run([*base, "--bits", str(16 * UECC_SIZES[0]), "--op", "mul"], capsys)
    assert status == 2 and f"is a bits={8 * UECC_SIZES[0]} routine" in err, err
    status, _, err = run([*base, "--bits", str(8 * UECC_SIZES[0]), "--op", "sqr"], capsys)
    assert status == 2 and "is a op=mul routine" in err, err
    status, _, err = run([*base, "--bits", str(8 * UECC_SIZES[0]), "--op", "mul"], capsys)
    assert status == 0, err


@pytest.mark.parametrize("args, message", [
    (["--sizes", "0"], "word counts are 1 to 127"),
    (["--sizes", "200"], "word counts are 1 to 127"),
    (["--sizes", "x"], "not a comma-separated list"),
    (["--mcu", "atmega9"], "atmega9"),
    (["--max-flash", "0"], "must be positive"),
    (["--tests", "-1"], "choose 1 to"),
    (["--tests", "100000000"], "choose 1 to"),
    (["--sizes", "90", "--mcu", "attiny85"], "could not be verified"),  # never "all verified"
    (["--max-flash", "10"], "relax the budget"),
])
def test_bad_input(tmp_path, capsys, args, message) -> None:
    status, _, err = uecc(capsys, *args, "-o", str(tmp_path))
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / DROP_IN_FILE).exists()


def test_a_line_break_in_the_path_stays_in_the_header_comment(tmp_path, capsys,
                                                              monkeypatch) -> None:
    """The header repeats the command; a path with a line break in it must not become code."""
    out = tmp_path / "a\n\tjmp 0"
    argv = ["uecc", "--sizes", "20", "--tests", "5", "-o", str(out)]
    monkeypatch.setattr("sys.argv", ["avrmp", *argv])
    status, _, err = uecc(capsys, *argv[1:])
    assert status == 0, err
    text = (out / DROP_IN_FILE).read_text()
    assert [line[:1] for line in text.splitlines() if "jmp 0" in line] == [";"]  # a comment
