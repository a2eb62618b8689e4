"""Cores without MUL (attiny85): every MUL lowered to a constant-time shift-and-add.

The lowered routines run in simavr on attiny85 (no MUL instruction, RCALL harness, 512 bytes SRAM)
with identical cycles and PC/data-address traces on every input; the lowering itself is checked
against Python on all 65536 byte pairs through the instruction sequence's own arithmetic."""

from __future__ import annotations

import shutil

import pytest

from avrmp.bench.catalog import catalog
from avrmp.bench.measure import measure
from avrmp.errors import AvrmpError
from avrmp.program.program import Program
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.techniques.kernel import Kernel
from avrmp.techniques.nomul import lower
from avrmp.verify.checks import require_sram, stack_room

needs_toolchain = pytest.mark.skipif(
    shutil.which("avr-gcc") is None, reason="needs gcc-avr, avr-libc, simavr, libsimavr-dev"
)


def _run_seq(p: Program, regs: dict[int, int]) -> dict[int, int]:
    """A tiny interpreter for the instructions the lowering emits."""
    r = dict(regs)
    c = 0
    for ins in p.instructions:
        m, ops = ins.mnemonic, ins.operands
        if m == "mov":
            r[ops[0]] = r[ops[1]]
        elif m == "lsr":
            c, r[ops[0]] = r[ops[0]] & 1, r[ops[0]] >> 1
        elif m == "ror":
            v = r[ops[0]]
            c, r[ops[0]] = v & 1, (v >> 1) | (c << 7)
        elif m == "sbc":
            v = r[ops[0]] - r[ops[1]] - c
            c, r[ops[0]] = int(v < 0), v & 0xFF
        elif m == "and":
            r[ops[0]] &= r[ops[1]]
        elif m == "add":
            v = r[ops[0]] + r[ops[1]]
            c, r[ops[0]] = v >> 8, v & 0xFF
        else:
            raise AssertionError(m)
    return r


def test_sequence_exhaustive() -> None:
    p = Program()
    p.mul(20, 21)
    body = lower(Kernel(p, {})).body
    assert not any(i.is_branch for i in body.instructions)
    assert body.static_cycles() == 42
    for a in range(256):
        for b in range(256):
            out = _run_seq(body, {20: a, 21: b, 0: 0, 1: 0, 18: 0})
            assert out[0] | out[1] << 8 == a * b
            assert out[20] == a and out[21] == b


def test_square_and_busy_registers() -> None:
    """mul r, r and a body that leaves no register free (scratch saved on the stack)."""
    p = Program()
    for r in range(2, 32):
        p.clr(r)
    p.mul(5, 5)
    body = lower(Kernel(p, {})).body
    assert [i.mnemonic for i in body.instructions].count("push") == 1


def test_signed_mul_refused() -> None:
    p = Program()
    p.muls(16, 17)
    with pytest.raises(AvrmpError, match="MULS"):
        lower(Kernel(p, {}))


@needs_toolchain
@pytest.mark.parametrize(
    "op,algo,looped",
    [("mul", "product-scanning", True), ("sqr", "product-scanning", True),
     ("mul", "operand-caching", True), ("mul", "product-scanning", False),
     ("sqr", "product-scanning", False), ("mul", "operand-scanning", False)],
)
@pytest.mark.parametrize("bits", [8, 24, 40, 96])
def test_attiny85(op: str, algo: str, looped: bool, bits: int) -> None:
    row = measure(Spec(op, bits, algo, looped=looped, mcu="attiny85"), tests=30)
    assert row.verified, row.failure
    assert row.mul == 0  # no MUL instruction left


@needs_toolchain
def test_attiny85_largest_looped() -> None:
    row = measure(Spec("mul", 128, "operand-caching", looped=True, mcu="attiny85"), tests=10)
    assert row.verified, row.failure


@needs_toolchain
def test_same_routine_on_atmega_without_lowering() -> None:
    spec = Spec("mul", 64, "product-scanning", looped=True)
    assert generate(spec).classes.get("MUL", 0) > 0
    assert generate(Spec("mul", 64, "product-scanning", looped=True, mcu="attiny85")).classes.get(
        "MUL", 0) == 0


def test_catalog_attiny85_skips_what_does_not_fit() -> None:
    specs = catalog(ops=["mul", "sqr"], mcu="attiny85")
    assert specs
    assert all(s.mcu == "attiny85" for s in specs)
    assert all(s.result_bytes + s.n_inputs * s.operand_bytes < 512 for s in specs)
    assert not any(s.algo == "karatsuba" for s in specs)


def test_verify_takes_every_routine_the_catalog_runs() -> None:
    """One SRAM rule (checks.spec_fits) for the catalog, verify and gen --verify: the 1024-bit
    looped squaring fills the ATtiny85's 512 bytes within 4 and is benchmarked, so verify must
    not refuse it (it did, with a 96-byte floor on the stack that the catalog did not use)."""
    specs = catalog(mcu="attiny85")
    assert any(s.op == "sqr" and s.bits == 1024 for s in specs)
    for s in specs:
        require_sram(s.op, s.operand_bytes, s.mcu, stack_room(s))


def test_too_large_for_rcall_is_a_clear_error() -> None:
    with pytest.raises(AvrmpError, match="RCALL|flash"):
        generate(Spec("mul", 256, "product-scanning", mcu="attiny85"))
