"""Karatsuba squaring (128..2048 bits) and large Karatsuba multiplication (512..2048 bits).

Every routine faces verify's edge cases and Karatsuba sign patterns plus a few random inputs (the
full 1000-input load runs in `avrmp bench`), with all of verify's checks: result, ABI, write region,
unmodified inputs, identical cycles and identical PC/data-address traces for every input.
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter

import pytest

from avrmp.bench.catalog import runs_on_mcu
from avrmp.blocks.square import emit_square
from avrmp.errors import AvrmpError
from avrmp.program.program import Program
from avrmp.regalloc.allocator import allocate
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.techniques.karatsuba.large import POOL, large_levels, level_combination, level_plan
from avrmp.techniques.karatsuba.passes import TOP_KEPT, hbar_kept
from avrmp.techniques.karatsuba.sqr import structures
from avrmp.verify.checks import verify_firmware
from avrmp.verify.toolchain import build_firmware

FIXED_SQR = [128, 160, 192, 224, 256]
LARGE = [384, 512, 768, 1024, 1536, 2048]


def _verify(tmp_path, spec: Spec, tests: int):
    routine = generate(spec)
    asm, _ = write_routine(routine, tmp_path)
    fw = build_firmware(asm, spec.symbol, spec.mcu, tmp_path)
    report = verify_firmware(fw, spec.op, spec.operand_bytes, spec.variant, tests, seed=1)
    assert report.passed, report.first_failure()
    return routine, report


# Core cycles today (ATmega128); a regression fails here, an improvement updates the pin.  The
# OsEID records are 1839 (192 bits) and 3079 (256 bits).
SQR_CYCLES = {128: 839, 160: 1269, 192: 1757, 224: 2282, 256: 2884, 384: 6246, 512: 9947,
              1024: 32226}


@pytest.mark.parametrize("bits", FIXED_SQR + [384, 512, 1024])
def test_sqr_fixed(tmp_path, bits):
    routine, report = _verify(tmp_path, Spec("sqr", bits, "karatsuba"), tests=40)
    assert routine.model_cycles == report.core_cycles  # straight-line: the cost model is exact
    assert report.core_cycles == SQR_CYCLES[bits]


def test_sqr_product_scanning_192(tmp_path):
    """Product scanning takes the register-allocated squaring block (Karatsuba's plain base at
    192 bits before its one memory level with L and Hbar joint took 1782)."""
    routine, report = _verify(tmp_path, Spec("sqr", 192, "product-scanning"), tests=20)
    assert routine.model_cycles == report.core_cycles == 1810


@pytest.mark.parametrize("bits", [192, 256])
def test_sqr_l1_stays_in_registers(bits):
    """Over plain bases, L's high half goes from L's square into Hbar's in registers: the joint
    block stores L_0 and Hbar (R[0..k), R[2k..4k)), never L_1 (R[k..2k), written later as U)."""
    asm = generate(Spec("sqr", bits, "karatsuba")).asm
    squares, hbar = asm.split("L_1 kept in registers ---")[1].split("; --- Hbar = A_h^2 + L_1 (")
    joint = squares + hbar.split("; --- ")[0]
    k = bits // 16
    stored = {int(x) for x in re.findall(r"; r\[(\d+)\]", joint)}
    assert stored == set(range(k)) | set(range(2 * k, 4 * k))


@pytest.mark.parametrize("bits", [192, 256])
def test_sqr_whole_level_keeps_a_h(bits):
    """With M in the same block as L and Hbar, |A_l - A_h| takes A_h's bytes from Hbar's square
    where they are still in registers: A_h (a'[0..k)) is loaded fewer than twice, where a
    separate M block loads all of it again."""
    asm = generate(Spec("sqr", bits, "karatsuba")).asm
    assert 'level: "whole"' in asm
    k = bits // 16
    loads = re.findall(r"^\tldd r\d+, Y\+(\d+)", asm, re.MULTILINE)
    assert sum(k <= int(d) < 2 * k for d in loads) < 2 * k - 2


@pytest.mark.parametrize("bits", [16, 24, 40, 56, 72, 88, 104, 136])
def test_sqr_odd_and_small_sizes(tmp_path, bits):
    _verify(tmp_path, Spec("sqr", bits, "karatsuba"), tests=30)


@pytest.mark.parametrize("op", ["mul", "sqr"])
@pytest.mark.parametrize("bits", [768, 1024, 1536, 2048])
def test_large(tmp_path, op, bits):
    routine, report = _verify(tmp_path, Spec(op, bits, "karatsuba"), tests=8)
    assert routine.model_cycles == report.core_cycles
    assert routine.code_bytes < 64 * 1024  # each size once, not 3^levels inlined copies
    assert report.stack_depth < 1200


@pytest.mark.parametrize("variant", ["branchfree", "branched"])
def test_large_mul_512(tmp_path, variant):
    """The 256-bit leaves leave their top bytes to the level (the fused combination returns
    (d, f) in r24:r25); the generated code says so."""
    routine, _ = _verify(tmp_path, Spec("mul", 512, "karatsuba", variant=variant), tests=30)
    assert "(d, f) for the caller" in routine.asm


@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_top_level_keeps_hbar_lo_head(op):
    """512 bits (32-byte halves, Y reaching L_1 and H at once): Hbar_lo's first bytes go from
    the low half to the high half in registers, never stored or read back; every later byte is
    stored once and read once (test_large_mul_512 and test_sqr_fixed verify them)."""
    asm = generate(Spec(op, 512, "karatsuba")).asm
    named = Counter(int(i) for i in re.findall(r"; Hbar_lo\[(\d+)\]", asm))
    kept = hbar_kept(32, mid=False)[0]
    assert 8 <= kept < 32 and named == {i: 2 for i in range(kept, 32)}


@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_top_bytes_take_h_hi_tail_from_registers(op):
    """512 bits: the top bytes' ripple loads H_hi's bytes once each, except the last TOP_KEPT,
    which the high half's last chunk loaded (each into the register of the byte of U stored just
    before it) and left in registers."""
    asm = generate(Spec(op, 512, "karatsuba")).asm
    loaded = Counter(int(i) for i in re.findall(r"; H_hi\[(\d+)\]", asm))
    assert loaded == {i: 1 for i in range(32 - TOP_KEPT)}


def test_level_takes_t_and_m_from_the_m_call_pointers():
    """512 bits, branch-free: after M's call, Z reaches t (just below M) by one pre-decrementing
    LD, and X takes M's address from Y, where M's call left its result pointer (test_large_mul_512
    verifies the routine)."""
    asm = generate(Spec("mul", 512, "karatsuba")).asm
    after_m = asm.split("summed where they land and pushed")[1].split("--- low half")[0]
    assert "ld r23, -Z" in after_m
    assert re.search(r"^\tmovw r26, r28$", after_m, re.MULTILINE)


def test_lowest_level_interleaves(tmp_path):
    """The lowest level below the top forms U_lo and U_hi in one pass (a signed arm when
    branched: verified here; test_large verifies the branch-free ones) and leaves U_hi's
    carry-in to its caller, which folds it in, also where it defers its own top bytes (the
    1024-bit level at 2048 bits)."""
    routine, _ = _verify(tmp_path, Spec("mul", 1024, "karatsuba", variant="branched"), tests=4)
    assert routine.asm.count("--- interleaved:") == 2  # the arm's two copies
    for op in ("mul", "sqr"):
        asm = generate(Spec(op, 2048, "karatsuba")).asm
        assert asm.count("--- interleaved:") == 1  # one level, emitted once
        assert asm.count("e, U_hi's carry-in, for the caller") == 1
        assert asm.count(f"s_e = e_L {'-/+' if op == 'mul' else '-'} e_M + e_H") == 1


def test_large_level_beyond_displacement_reach(tmp_path):
    """A level of 56-byte halves: the low half's chunks would reach H by displacement, the high
    half's wider ones would not, so the combination addresses H through Z (the same code serves
    multiplication, whose untuned 832- and 896-bit leaves take minutes to search)."""
    _verify(tmp_path, Spec("sqr", 896, "karatsuba"), tests=4)


@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_large_writes_sp_once_each_way(tmp_path, op):
    """The top level reserves every frame of the call chain, the leaf's included, and releases
    them: the leaf, called 9 times at 1024 bits, writes no SP of its own (the squaring's leaf
    needs no frame at all)."""
    routine = generate(Spec(op, 1024, "karatsuba", variant="branched" if op == "mul" else
                            "branchfree"))
    asm, _ = write_routine(routine, tmp_path)
    text = asm.read_text()
    assert text.count("out 61,") == 2  # SPL: the reservation and the release
    assert ("reserved by the caller" if op == "mul" else "no stack frame") in text


@pytest.mark.parametrize(("op", "bits"), [("sqr", 256), ("sqr", 512), ("mul", 1024),
                                          ("sqr", 2048), ("mul", 2048)])
def test_atmega328p(tmp_path, op, bits):
    spec = Spec(op, bits, "karatsuba", mcu="atmega328p")
    if not runs_on_mcu(spec):
        # 2048-bit multiplication: 1 KB of buffers plus a 1 KB stack exceed the 328p's 2 KB SRAM.
        assert (op, bits) == ("mul", 2048)
        pytest.skip(f"{op} {bits} does not fit the atmega328p's SRAM")
    _verify(tmp_path, spec, tests=8)


@pytest.mark.parametrize("op", ["mul", "sqr"])
def test_every_large_levels_option_fits_the_registers(op):
    """Every memory level of every --levels option offered above 256 bits allocates its
    combination, whether the leaf leaves its top bytes to it or not (a multiplication over an
    8-byte leaf would not: large_levels does not offer it)."""
    for bits, levels, leaf_defers, branched in itertools.product(
            LARGE, range(1, 6), (False, True), (False, op == "mul")):
        if levels not in large_levels(bits // 8, op):
            continue
        values, mid, inter = level_plan(bits // 8, levels, leaf_defers)
        for i in range(levels):
            combine = level_combination((bits // 8 >> i) // 2, op, values[i], i == 0, branched,
                                        mid[i], inter[i])
            allocate(combine, POOL, Program())  # AllocationError if it does not fit


def test_levels_parameter(tmp_path):
    for levels in large_levels(128):
        _verify(tmp_path / str(levels), Spec("sqr", 1024, "karatsuba", levels=levels), tests=3)
    _verify(tmp_path / "fixed", Spec("sqr", 256, "karatsuba", levels=2), tests=10)


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_every_fixed_levels_option(tmp_path, bits):
    """Every --levels a fixed size accepts makes a correct routine: two and three memory levels
    reload pointers through the frame, which must then hold them, and Y's reload must leave Z
    where the next block expects it."""
    for levels in sorted({lv for lv, _ in structures(bits // 8)}):
        _verify(tmp_path / str(levels), Spec("sqr", bits, "karatsuba", levels=levels), tests=3)


def test_levels_outside_a_fixed_size_are_refused():
    with pytest.raises(AvrmpError, match=r"--levels 1: 256-bit Karatsuba squaring supports levels 2, 3, 4"):
        generate(Spec("sqr", 256, "karatsuba", levels=1))


def test_sqr_has_no_sign_handling():
    """Squaring subtracts M unconditionally: no branch, no t, fewer instructions than mul."""
    for bits in (128, 256):
        sqr = generate(Spec("sqr", bits, "karatsuba"))
        mul = generate(Spec("mul", bits, "karatsuba"))
        assert not any(line.strip().startswith(("br", "rjmp")) for line in sqr.asm.splitlines())
        assert sqr.core_bytes < mul.core_bytes
        assert sqr.model_cycles < mul.model_cycles


def test_emit_square_against_python():
    """The block itself, interpreted over virtual registers: each cross product once."""
    from avrmp.regalloc.vprogram import VProgram

    rng = random.Random(5)
    cases = [(1, 0), (2, 1), (3, 2), (5, 5), (6, 3), (7, 8), (8, 8), (9, 17), (12, 12)]
    for (n, e), w, paired in itertools.product(cases, (2, 4, 6), (False, True)):
        p = VProgram()
        zero = p.v("zero")
        p.clr(zero)
        zero_hi = None
        if paired:
            zero_hi = p.v("zero")
            p.clr(zero_hi)
        a = [p.v("a") for _ in range(n)]
        addend = [p.v("e") for _ in range(e)]
        out = emit_square(p, a, zero, addend=addend, zero_hi=zero_hi, w=w)
        muls = sum(1 for it in p.items if getattr(it, "mnemonic", "") == "mul")
        assert muls == n * (n + 1) // 2
        for _ in range(30):
            av = [rng.choice((0, 255, rng.randrange(256))) for _ in range(n)]
            ev = [rng.choice((0, 255, rng.randrange(256))) for _ in range(e)]
            regs = _interpret(p, {**dict(zip([v.id for v in a], av)),
                                  **dict(zip([v.id for v in addend], ev))})
            got = sum(regs[v.id] << (8 * i) for i, v in enumerate(out))
            x = int.from_bytes(bytes(av), "little")
            y = int.from_bytes(bytes(ev), "little")
            assert got == x * x + y


def _interpret(p, init: dict[int, int]) -> dict:
    """A tiny AVR interpreter over a VProgram (the instructions emit_square uses)."""
    from avrmp.regalloc.vprogram import V, VInstr

    regs: dict = dict(init)
    phys = {0: 0, 1: 0}
    c = 0

    def get(o):
        return regs.get(o.id, 0) if isinstance(o, V) else phys[o]

    def put(o, v):
        if isinstance(o, V):
            regs[o.id] = v & 0xFF
        else:
            phys[o] = v & 0xFF

    for it in p.items:
        if not isinstance(it, VInstr):
            continue
        m, ops = it.mnemonic, it.operands
        if m == "copy_pair":
            put(ops[0], get(ops[2]))
            put(ops[1], get(ops[3]))
        elif m == "mul":
            r = get(ops[0]) * get(ops[1])
            phys[0], phys[1], c = r & 0xFF, r >> 8, r >> 15
        elif m in ("add", "adc"):
            r = get(ops[0]) + get(ops[1]) + (c if m == "adc" else 0)
            put(ops[0], r)
            c = r >> 8
        elif m in ("sub", "sbc"):
            r = get(ops[0]) - get(ops[1]) - (c if m == "sbc" else 0)
            put(ops[0], r)
            c = int(r < 0)
        elif m in ("lsl", "rol"):
            r = (get(ops[0]) << 1) | (c if m == "rol" else 0)
            put(ops[0], r)
            c = r >> 8
        elif m in ("lsr", "ror"):
            v = get(ops[0])
            put(ops[0], (v >> 1) | (c << 7 if m == "ror" else 0))
            c = v & 1
        elif m == "clr":
            put(ops[0], 0)
        elif m == "mov":
            put(ops[0], get(ops[1]))
        else:
            raise AssertionError(f"unexpected {m}")
    return regs


@pytest.mark.parametrize(("op", "bits"), [("mul", 1024), ("sqr", 512), ("mul", 2048)])
def test_atmega2560_three_byte_return_addresses(tmp_path, op, bits):
    """Large routines are chains of subroutines whose frames lie a return address further above
    each callee's SP: three bytes on the ATmega2560."""
    _verify(tmp_path, Spec(op, bits, "karatsuba", mcu="atmega2560"), tests=8)
