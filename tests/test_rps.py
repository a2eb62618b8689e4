"""RPS multiplication and squaring: one routine, every run-time length 4..256 bytes (multiples of 4).

Each length gets a handful of edge cases and a few random inputs (the full 1000-input load runs in
`avrmp bench`); every check of `avrmp verify` applies: result, ABI, write region, unmodified inputs,
and identical cycles and PC/data-address traces for all inputs of one length.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.verify.checks import check_one, sram_fits
from avrmp.verify.inputs import oracle
from avrmp.verify.simulator import Call, run_batch
from avrmp.verify.toolchain import build_firmware

LENGTHS = list(range(4, 257, 4))
RANDOM_PER_LENGTH = 4


def _operands(n: int, n_inputs: int, rng: random.Random) -> list[tuple[int, ...]]:
    top = (1 << (8 * n)) - 1
    edge = [0, top, 1, 1 << (8 * n - 1), int.from_bytes(b"\x55" * n, "little")]
    out = [
        (x,) if n_inputs == 1 else (x, y)
        for x, y in ((top, top), (0, top), (top, 1), (edge[3], edge[4]), (edge[4], top))
    ]
    out += [
        tuple(rng.getrandbits(8 * n) for _ in range(n_inputs)) for _ in range(RANDOM_PER_LENGTH)
    ]
    return out


@pytest.fixture(scope="module")
def firmwares(tmp_path_factory):
    cache = {}

    def get(op: str, mcu: str):
        if (op, mcu) not in cache:
            spec = Spec(op, 256, "rps", mcu=mcu)
            out = Path(tmp_path_factory.mktemp(f"rps-{op}-{mcu}"))
            asm, _ = write_routine(generate(spec), out)
            cache[op, mcu] = build_firmware(asm, spec.symbol, mcu, out)
        return cache[op, mcu]

    return get


@pytest.mark.parametrize("mcu", ["atmega128", "atmega328p"])
@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_every_length(firmwares, op, mcu):
    fw = firmwares(op, mcu)
    rng = random.Random(f"{op}-{mcu}")
    n_inputs = 1 if op == "sqr" else 2
    calls, meta = [], []
    skipped = [n for n in LENGTHS if not sram_fits(op, n, mcu)]
    for n in LENGTHS:
        if n in skipped:
            continue
        for ops in _operands(n, n_inputs, rng):
            calls.append(Call(tuple(x.to_bytes(n, "little") for x in ops), 2 * n, int_args=(n,)))
            meta.append(n)
    results = run_batch(fw, calls, max_cycles=2_000_000)
    first: dict[int, object] = {}
    for call, n, m in zip(calls, meta, results):
        bad = check_one(m, oracle(op, n, call.operands))
        assert bad is None, f"{op} len {n} on {mcu}: {bad}"
        ref = first.setdefault(n, m)
        assert (m.core_cycles, m.abi_cycles) == (ref.core_cycles, ref.abi_cycles), f"len {n}"
        assert m.pc_digest == ref.pc_digest, f"{op} len {n}: PC trace depends on the data"
        assert m.addr_digest == ref.addr_digest, f"{op} len {n}: address trace depends on the data"
    assert len(first) == len(LENGTHS) - len(skipped)
    if skipped:  # a clear note, not a silent gap
        print(f"{op} on {mcu}: lengths {skipped} do not fit in SRAM, skipped")


@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_code_size_and_length_independent_text(op):
    a = generate(Spec(op, 256, "rps"))
    b = generate(Spec(op, 32, "rps"))
    assert a.code_bytes < 1024
    assert a.asm == b.asm and a.header == b.header
    assert a.spec.symbol == f"avrmp_{op}_rps"
    assert "uint16_t len" in a.header


def test_bad_lengths_rejected():
    from avrmp.errors import AvrmpError

    for bits in (8, 40, 2056):
        with pytest.raises(AvrmpError):
            Spec("mul", bits, "rps")
