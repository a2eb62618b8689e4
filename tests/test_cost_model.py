"""Differential test of the builder's cost model: for straight-line (branch-free, unrolled) routines
the static cycle count (Routine.model_cycles, the sum of isa.py's per-instruction costs over the core
body) must equal the core cycles simavr counts between NAME__core_begin and NAME__core_end, exactly.
The model picks Karatsuba's default levels, so a drift here would also mislead that choice."""

from __future__ import annotations

import random
import shutil

import pytest

from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec, result_bytes
from avrmp.verify.inputs import oracle
from avrmp.verify.simulator import Call, run_batch
from avrmp.verify.toolchain import build_firmware

pytestmark = pytest.mark.skipif(
    shutil.which("avr-gcc") is None, reason="needs gcc-avr, avr-libc, simavr, libsimavr-dev"
)

SPECS = [
    Spec("mul", 8, "product-scanning"),
    Spec("mul", 64, "product-scanning"),
    Spec("mul", 96, "product-scanning"),
    Spec("mul", 136, "product-scanning"),
    Spec("mul", 256, "product-scanning"),
    Spec("sqr", 72, "product-scanning"),
    Spec("sqr", 256, "product-scanning"),
    Spec("mul", 64, "operand-scanning"),
    Spec("mul", 160, "operand-scanning"),
    Spec("mul", 160, "hybrid"),
    Spec("mul", 256, "hybrid", d=3),
    Spec("mul", 160, "operand-caching"),
    Spec("mul", 256, "operand-caching"),
    Spec("mul", 192, "consecutive-operand-caching"),
    Spec("mul", 24, "karatsuba"),
    Spec("mul", 48, "karatsuba", levels=1),
    Spec("mul", 64, "karatsuba", levels=2),
    Spec("mul", 96, "karatsuba", levels=3),
    Spec("mul", 112, "karatsuba"),
    Spec("mul", 128, "karatsuba", levels=2),
    Spec("mul", 128, "karatsuba", levels=3),
    Spec("mul", 192, "karatsuba", levels=4),
    Spec("mul", 256, "karatsuba", levels=3),
    Spec("mul", 256, "karatsuba", levels=4),
    Spec("add", 8, "ripple"),
    Spec("add", 256, "ripple"),
    Spec("sub", 128, "ripple"),
    Spec("sub", 2048, "ripple"),
    Spec("mul", 128, "product-scanning", mcu="atmega328p"),
    Spec("mul", 128, "karatsuba", mcu="atmega328p"),
    Spec("mul", 512, "karatsuba", mcu="atmega2560"),  # RCALL and RET with 3-byte return addresses
    Spec("mul", 64, "product-scanning", mcu="attiny85"),
    Spec("add", 64, "ripple", mcu="attiny85"),
]


def _id(spec: Spec) -> str:
    extra = "".join(f"-{k}{getattr(spec, k)}" for k in ("levels", "d") if getattr(spec, k))
    return f"{spec.op}{spec.bits}-{spec.algo}{extra}-{spec.mcu}"


@pytest.mark.parametrize("spec", SPECS, ids=_id)
def test_model_equals_simulator(spec: Spec, tmp_path) -> None:
    routine = generate(spec)
    assert routine.model_cycles is not None, "straight-line code must have a static cost"
    asm, _ = write_routine(routine, tmp_path)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp_path)
    n = spec.operand_bytes
    rng = random.Random(spec.bits)
    top = (1 << (8 * n)) - 1
    operand_sets = [(0, 0), (top, top), (rng.getrandbits(8 * n), rng.getrandbits(8 * n))]
    calls = [
        Call(tuple(x.to_bytes(n, "little") for x in ops[: spec.n_inputs]),
             result_bytes(spec.op, n))
        for ops in operand_sets
    ]
    for call, m in zip(calls, run_batch(fw, calls)):
        assert m.error is None
        assert m.result == oracle(spec.op, n, call.operands)  # a model of wrong code is no use
        assert m.core_cycles == routine.model_cycles, (
            f"cost model says {routine.model_cycles} cycles, simavr counts {m.core_cycles}"
        )
    # The core is what the papers count; the ABI adds CALL/RET and the wrapper around it.
    assert fw.core_code_bytes == routine.core_bytes
    assert fw.code_bytes == routine.code_bytes


def test_product_scanning_96_meets_the_paper(tmp_path) -> None:
    """Seed 000 Table 2: 96-bit product scanning in at most 836 cycles.  At 12 bytes the operands do
    not fit beside the pointers, so this pins the reload planning (pointers given up early, last
    loads into the pointer registers) and the accumulator without a zero register; 835 is what it
    achieves today."""
    spec = Spec("mul", 96, "product-scanning")
    routine = generate(spec)
    asm, _ = write_routine(routine, tmp_path)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp_path)
    n = spec.operand_bytes
    ops = (bytes(range(1, n + 1)), bytes(range(0xFF, 0xFF - n, -1)))
    (m,) = run_batch(fw, [Call(ops, result_bytes(spec.op, n))])
    assert m.error is None and m.result == oracle(spec.op, n, ops)
    assert m.core_cycles <= 836
    assert m.core_cycles == routine.model_cycles == 835


def test_branched_karatsuba_has_no_static_cost() -> None:
    assert generate(Spec("mul", 128, "karatsuba", variant="branched")).model_cycles is None
