"""Looped product scanning (mul, sqr) and looped operand caching (mul): generated, run in simavr and
checked against Python ints (result, ABI, write region, identical cycles and PC/data-address
traces on every input), at even and odd byte counts, and within 1 KB of flash at 1024+ bits."""

from __future__ import annotations

import shutil

import pytest

from avrmp.bench.measure import measure
from avrmp.errors import AvrmpError
from avrmp.routine.generate import generate
from avrmp.spec import Spec

pytestmark = pytest.mark.skipif(
    shutil.which("avr-gcc") is None, reason="needs gcc-avr, avr-libc, simavr, libsimavr-dev"
)

KERNELS = [("mul", "product-scanning"), ("sqr", "product-scanning"), ("mul", "operand-caching")]


@pytest.mark.parametrize("op,algo", KERNELS)
@pytest.mark.parametrize("bits", [8, 16, 24, 56, 72, 136, 160, 264])
def test_verified_atmega128(op: str, algo: str, bits: int) -> None:
    row = measure(Spec(op, bits, algo, looped=True), tests=40)
    assert row.verified, row.failure


@pytest.mark.parametrize("op,algo", KERNELS)
@pytest.mark.parametrize("bits", [40, 512])
def test_verified_atmega328p(op: str, algo: str, bits: int) -> None:
    row = measure(Spec(op, bits, algo, looped=True, mcu="atmega328p"), tests=20)
    assert row.verified, row.failure


@pytest.mark.parametrize("op,algo", KERNELS)
def test_large_operand_verified(op: str, algo: str) -> None:
    row = measure(Spec(op, 1024 + 8, algo, looped=True), tests=3)  # 129 bytes: odd, > 128
    assert row.verified, row.failure


@pytest.mark.parametrize("e", [1, 2, 3, 5, 8])
def test_operand_caching_every_e(e: int) -> None:
    row = measure(Spec("mul", 88, "operand-caching", looped=True, e=e), tests=20)
    assert row.verified, row.failure


def test_operand_caching_rejects_large_e() -> None:
    with pytest.raises(AvrmpError, match="--e 9"):
        generate(Spec("mul", 160, "operand-caching", looped=True, e=9))


@pytest.mark.parametrize("op,algo", KERNELS)
@pytest.mark.parametrize("bits", [1024, 2048])
def test_fits_in_1kb(op: str, algo: str, bits: int) -> None:
    routine = generate(Spec(op, bits, algo, looped=True))
    assert routine.code_bytes < 1024
    # The code does not grow with the operands.
    assert routine.code_bytes == generate(Spec(op, bits // 2, algo, looped=True)).code_bytes


def test_looped_slower_than_unrolled_but_smaller() -> None:
    unrolled = measure(Spec("mul", 128, "product-scanning"), tests=5)
    loop = measure(Spec("mul", 128, "product-scanning", looped=True), tests=5)
    assert loop.code_bytes < unrolled.code_bytes
    assert loop.core_cycles > unrolled.core_cycles


@pytest.mark.parametrize("mcu", ["atmega128", "attiny85"])
@pytest.mark.parametrize("bits", [8, 24, 168, 256])
def test_operand_scanning_loop_any_length(mcu: str, bits: int) -> None:
    """One routine, the length a run-time argument (measure passes it), with and without MUL."""
    row = measure(Spec("mul", bits, "operand-scanning-loop", mcu=mcu), tests=30)
    assert row.verified, row.failure
    assert row.code_bytes < 200  # 84 bytes with MUL; the shift-and-add inline without
