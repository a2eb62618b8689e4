"""The picker: avrmp best compares every algorithm and parameter for an operation on a part, and
writes the fastest routine within the flash and stack budgets, verified; nothing fitting, or bad
input, is one line and status 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_run import run

ROW = re.compile(r"^(?P<label>.+?)\s+(?P<core>\d+)\s+(?P<abi>\d+)\s+(?P<bytes>\d+)"
                 r"\s+(?P<stack>\d+)(?P<mark>.*)$")


def best(capsys, *args: str) -> tuple[int, str, str]:
    return run(["best", *args], capsys)


def rows(out: str) -> list[dict]:
    return [m.groupdict() for m in map(ROW.match, out.splitlines()[1:]) if m]


def test_fastest_within_a_flash_budget(tmp_path, capsys) -> None:
    status, out, _ = best(capsys, "mul", "--bits", "128", "--mcu", "atmega328p",
                          "--max-flash", "1500", "-o", str(tmp_path))
    assert status == 0
    table = rows(out)
    chosen = [i for i, r in enumerate(table) if "<- chosen" in r["mark"]]
    assert len(chosen) == 1 and len(table) > 10
    at = chosen[0]
    cycles = [int(r["core"]) for r in table]
    assert cycles == sorted(cycles)
    # every faster candidate breaks the budget; the chosen one keeps it
    assert all("flash" in r["mark"] for r in table[:at])
    assert int(table[at]["bytes"]) <= 1500
    assert sorted(p.suffix for p in Path(tmp_path).iterdir()) == [".S", ".h"]


def test_a_part_without_mul(tmp_path, capsys) -> None:
    status, out, _ = best(capsys, "mul", "--bits", "64", "--mcu", "attiny85", "-o",
                          str(tmp_path))
    assert status == 0
    assert not any("karatsuba" in r["label"] for r in rows(out))  # it needs MUL
    assert any("<- chosen" in r["mark"] for r in rows(out))


@pytest.mark.parametrize("args, needle", [
    (["mul", "--bits", "256", "--max-flash", "50"], "relax the budget"),
    (["mul", "--bits", "12"], "--bits 12"),
    (["mul", "--bits", "64", "--max-stack", "-1"], "--max-stack -1"),
    (["mul", "--bits", "0"], "positive multiple of 8"),
    (["mul", "--bits", "100000"], "no algorithm does mul at 100000 bits"),
    (["mul", "--bits", "64", "--mcu", "atxmega128a1"], "cannot simulate"),
    (["mul", "--bits", "1024", "--mcu", "attiny85"], "choose a smaller size or a larger part"),
    (["frob", "--bits", "64"], "frob"),
    (["add", "--bits", "64", "--name", "SREG"], "could not declare it"),
], ids=lambda x: str(x))
def test_refusals(args, needle, tmp_path, capsys) -> None:
    out_dir = tmp_path / "out"
    status, _, err = best(capsys, *args, "-o", str(out_dir))
    assert status == 2 and len(err.splitlines()) == 1 and err.startswith("avrmp: error:")
    assert needle in err and not out_dir.exists()
