"""The benchmark's plots and table: three PNGs from the committed results, the references they
divide by, the parts they compare."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from avrmp.bench.measure import Row
from avrmp.bench.papers import best_paper, best_public
from avrmp.bench.plot import plot
from avrmp.bench.report import markdown
from avrmp.errors import AvrmpError

RESULTS = Path(__file__).parent.parent / "bench" / "results.json"


def test_three_plots_from_the_results(tmp_path) -> None:
    rows = [Row(**d) for d in json.loads(RESULTS.read_text())]
    paths = plot(rows, tmp_path / "cycles.png")
    assert [p.name for p in paths] == ["cycles.png", "cycles-relative.png",
                                       "cycles-per-product.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 20_000


def test_plots_are_written_all_or_none(tmp_path) -> None:
    rows = [Row(**d) for d in json.loads(RESULTS.read_text()) if d["op"] == "add"]
    (tmp_path / "cycles-per-product.png").mkdir()
    with pytest.raises(AvrmpError, match="cycles-per-product.png"):
        plot(rows, tmp_path / "cycles.png")
    assert [p.name for p in tmp_path.iterdir()] == ["cycles-per-product.png"]


def test_references() -> None:
    assert ("best public (OsEID)", 4512, False) in best_public("mul", 256)
    assert any(abi and cycles == 5038 for _, cycles, abi in best_public("mul", 256))
    assert best_paper("mul", 256) == 4797  # seed 000's branched Karatsuba
    assert best_paper("mul", 2048) == 387195  # T5's e = 20 (43 registers) left out
    assert best_paper("sqr", 256) is None


def test_a_run_without_multiplications(tmp_path) -> None:
    rows = [Row(**d) for d in json.loads(RESULTS.read_text()) if d["op"] == "add"]
    for p in plot(rows, tmp_path / "cycles.png"):
        assert p.stat().st_size > 5_000


def test_a_table_of_another_part_leaves_out_the_atmega128_comparisons() -> None:
    """The records and the papers' figures are ATmega128 timing: a bench on another part says
    so and leaves their columns empty, instead of comparing across parts."""
    row = next(Row(**d) for d in json.loads(RESULTS.read_text())
               if (d["op"], d["bits"], d["algo"]) == ("mul", 256, "karatsuba"))
    assert "OsEID" in markdown([row])
    other = markdown([dataclasses.replace(row, mcu="atmega328p")])
    assert other.startswith("Measured on atmega328p:") and "OsEID): 4512" not in other
    assert other.splitlines()[4].endswith("|  |  |")


def test_a_row_measured_on_another_part_carries_no_atmega128_figures() -> None:
    """bench --json as its table: no papers' or records' figures beside another part's cycles."""
    from avrmp.bench.measure import measure
    from avrmp.spec import Spec

    assert measure(Spec("mul", 64, "product-scanning"), tests=1).references
    assert measure(Spec("mul", 64, "product-scanning", mcu="attiny85"), tests=1).references == []
