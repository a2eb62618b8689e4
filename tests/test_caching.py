"""Hybrid, operand-caching and consecutive-operand-caching multiplication: generated, run in simavr
against Python ints, at sizes that hit the awkward cases (n mod d != 0, n < e, n = 1)."""

from __future__ import annotations

import pytest

from avrmp.bench.measure import measure
from avrmp.errors import AvrmpError
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.techniques import operand_caching

CASES = [
    # (algo, bytes, params, mcu)
    ("hybrid", 1, {}, "atmega128"),
    ("hybrid", 7, {"d": 3}, "atmega128"),  # n mod d = 1: short last block
    ("hybrid", 11, {"d": 5}, "atmega328p"),  # n mod d = 1 with the default d
    ("hybrid", 9, {"d": 6}, "atmega128"),  # d above the no-reload limit: A_I bytes reload
    ("hybrid", 20, {}, "atmega328p"),
    ("operand-caching", 1, {}, "atmega128"),
    ("operand-caching", 3, {"e": 3}, "atmega128"),  # e = n: one row, no init block
    ("operand-caching", 13, {"e": 4}, "atmega328p"),  # n mod e = 1: 1-byte init block, 3 rows
    ("operand-caching", 12, {"e": 2}, "atmega128"),  # e divides n: no init block
    ("operand-caching", 24, {"e": 20}, "atmega128"),  # e beyond the registers: reloads
    ("operand-caching", 20, {}, "atmega328p"),
    ("consecutive-operand-caching", 1, {}, "atmega128"),
    ("consecutive-operand-caching", 17, {"e": 3}, "atmega328p"),
    ("consecutive-operand-caching", 16, {}, "atmega128"),
]


@pytest.mark.parametrize("algo,n,params,mcu", CASES, ids=lambda v: str(v))
def test_verifies(algo, n, params, mcu):
    row = measure(Spec("mul", 8 * n, algo, mcu=mcu, **params), tests=40)
    assert row.verified, row.failure
    assert row.mul == n * n


@pytest.mark.parametrize("option", operand_caching.OPTIONS, ids=str)
@pytest.mark.parametrize("n,e", [(13, 4), (40, 10)])
def test_every_pointer_layout_and_zero_pair(monkeypatch, option, n, e):
    """Whatever the cost model would pick: r on X or Y (80 result bytes: Y moves), the zero pair
    from either operand's pointer, a pointer's last byte loaded into the pointer itself."""
    monkeypatch.setattr(operand_caching, "OPTIONS", [option])
    row = measure(Spec("mul", 8 * n, "consecutive-operand-caching", e=e), tests=20)
    assert row.verified, row.failure


# Core cycles (ATmega128) measured when these kernels were written; a change is either a
# regression or an improvement to record here and in docs/quadratic.md.
BASELINE = [
    ("hybrid", 160, {}, 2573),
    ("operand-caching", 160, {"e": 10}, 2331),
    ("operand-caching", 160, {"e": 4}, 2838),
    # Seed 000 Table 2 (Seo and Kim): 1523 and 2341.
    ("consecutive-operand-caching", 128, {}, 1512),
    ("consecutive-operand-caching", 160, {}, 2331),
]


@pytest.mark.parametrize("algo,bits,params,cycles", BASELINE, ids=lambda v: str(v))
def test_cycles_pinned(algo, bits, params, cycles):
    row = measure(Spec("mul", bits, algo, **params), tests=10)
    assert row.verified, row.failure
    assert row.core_cycles == row.model_cycles  # straight-line code: the cost model is exact
    assert row.core_cycles == cycles


def test_seed001_table3_counts():
    """Seed 001 Table 3, operand caching e = 10 at 160 bits: 80 LD, 60 ST, 400 MUL (at most)."""
    r = generate(Spec("mul", 160, "operand-caching", e=10))
    assert r.classes["MUL"] == 400
    assert r.classes["LD"] <= 80 and r.classes["ST"] <= 60


def test_bad_d_is_a_user_error():
    with pytest.raises(AvrmpError, match="--d 9"):
        generate(Spec("mul", 160, "hybrid", d=9))


def test_e_out_of_range_is_a_user_error():
    with pytest.raises(AvrmpError, match="--e 0"):
        generate(Spec("mul", 160, "operand-caching", e=0))


def test_flash_too_small_is_reported():
    with pytest.raises(AvrmpError, match="flash"):
        generate(Spec("mul", 512, "operand-caching", mcu="atmega328p"))
