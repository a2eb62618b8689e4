"""The row-wise in-register product block (blocks.emit_product_rows), in isolation and on the
simulator: a tiny routine loads a (na bytes) and b (nb bytes), runs the block (with an addend
loaded from the result buffer, when given), and stores the result; its output is compared with
Python's integers for every length pair 1..8: random operands, all-0xFF ones and operands of
extreme bytes."""

from __future__ import annotations

import random

import pytest

from avrmp.blocks.products import emit_product, emit_product_rows
from avrmp.program.cycles import static_cycles
from avrmp.program.program import Program
from avrmp.regalloc.allocator import allocate
from avrmp.regalloc.vprogram import VProgram
from avrmp.routine.files import write_routine
from avrmp.routine.wrapper import wrap
from avrmp.spec import Spec
from avrmp.target.avr.isa import Mem
from avrmp.techniques.kernel import Kernel
from avrmp.verify.inputs import EXTREME_BYTES
from avrmp.verify.simulator import Call, run_batch
from avrmp.verify.toolchain import build_firmware

POOL = list(range(2, 26))


def _block_routine(na: int, nb: int, ne: int, block) -> tuple[Program, int]:
    """r = a * b + e, e read from the a buffer after a's bytes (the addend registers are
    consumed)."""
    vp = VProgram()
    zero, zero_hi = vp.v("zero"), vp.v("zero")
    vp.clr_pair(zero, zero_hi)
    a = [vp.v("a") for _ in range(na)]
    for i, v in enumerate(a):
        vp.ldd(v, Mem("Y", disp=i))
    b = [vp.v("b") for _ in range(nb)]
    for v in b:
        vp.ld(v, Mem("X", "+"))
    e = [vp.v("e") for _ in range(ne)]
    for i, v in enumerate(e):
        vp.ldd(v, Mem("Y", disp=na + i))
    vp.comment("block")
    out = block(vp, a, b, zero, e, zero_hi)
    for i, v in enumerate(out):
        vp.std(Mem("Z", disp=i), v)
    p = Program()
    allocate(vp, POOL, p, spill_slots=[Mem("Z", disp=j) for j in range(na + nb)])
    return p, len(out)


def _check(tmp_path, na: int, nb: int, ne: int, block=emit_product_rows, tests: int = 12):
    body, nout = _block_routine(na, nb, ne, block)
    assert nout == na + nb
    spec = Spec("mul", 8 * max(na, nb), "product-scanning", name=f"blk_{na}_{nb}_{ne}")
    routine = wrap(spec, Kernel(body, {"a": 28, "b": 26, "r": 30}))
    asm, _ = write_routine(routine, tmp_path)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp_path)
    rng = random.Random(na * 100 + nb * 10 + ne)
    cases = [(b"\xff" * na, b"\xff" * nb, b"\xff" * ne), (bytes(na), bytes(nb), bytes(ne))]
    cases += [(rng.randbytes(na), rng.randbytes(nb), rng.randbytes(ne)) for _ in range(tests)]
    # Extreme bytes drive the carry chains to their limits: a top byte that takes carries from
    # two chains (or a catcher that cannot take them) fails on these long before on random ones.
    cases += [tuple(bytes(rng.choice(EXTREME_BYTES) for _ in range(n)) for n in (na, nb, ne))
              for _ in range(4 * tests)]
    calls = [Call((x + e, y), na + nb) for x, y, e in cases]
    for (x, y, e), m in zip(cases, run_batch(fw, calls)):
        assert m.error is None, m.error
        want = sum(int.from_bytes(v, "little") * w for v, w in ((x, int.from_bytes(y, "little")),
                                                                 (e, 1)))
        assert int.from_bytes(m.result, "little") == want, (na, nb, ne, x.hex(), y.hex(), e.hex())
    return routine


LENGTHS = [(na, nb) for na in range(1, 9) for nb in range(1, 9)]


@pytest.mark.parametrize(("na", "nb"), LENGTHS)
def test_rows_block(tmp_path, na, nb):
    for ne in sorted({0, na, nb}):
        _check(tmp_path / str(ne), na, nb, ne)


@pytest.mark.parametrize("n", range(3, 6))
def test_rows_block_is_cheaper(tmp_path, n):
    """Square blocks of the lengths Karatsuba gives the row-wise block by default (ROWS_UPTO), with
    and without the addend: fewer cycles than product scanning.  (From 6 bytes on, the MOVW
    temporaries often find no free register pair and become two MOVs.)"""
    for ne in (0, n):
        rows = _check(tmp_path / f"r{ne}", n, n, ne, emit_product_rows, tests=2)
        scan = _check(tmp_path / f"s{ne}", n, n, ne, emit_product, tests=2)
        assert rows.model_cycles < scan.model_cycles, (n, ne)


@pytest.mark.parametrize(("ne", "bound"), [(0, 72), (4, 76)])
def test_rows_block_meets_its_lower_bound(ne, bound):
    """The 4x4 block, alone, at the bound docs/karatsuba.md derives: 32 cycles of MUL, one MOVW or
    carry-chain end per product (16) and an addition per product byte that lands where a byte
    already is (24; 28 when a 4-byte addend fills the low half, as L_1 does in Hbar)."""
    p, _ = _block_routine(4, 4, ne, emit_product_rows)
    start = next(i for i, it in enumerate(p.items) if getattr(it, "text", None) == "block")
    end = next(i for i, it in enumerate(p.items)
               if i > start and getattr(it, "mnemonic", None) == "std")
    assert static_cycles(p.items[start:end]) == bound
