"""The builder (isa.py, program.py): operands the AVR cannot encode are refused when the kernel
emits them, a carry consumed across a MUL is refused, sizes and cycle costs of single instructions,
and generation is deterministic (the same Spec gives byte-identical .S and .h text, also across
processes with different hash seeds)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from avrmp.blocks.pointers import PointerWindow
from avrmp.blocks.stack import holds_sp, read_sp
from avrmp.program.gnu_as import instruction_text
from avrmp.program.program import Program
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.target.avr.isa import Instr, IsaError, Mem
from avrmp.target.avr.parts import MCUS

# ------------------------------------------------------------------ operand constraints


@pytest.mark.parametrize(
    "emit, why",
    [
        (lambda p: p.movw(3, 4), "even"),
        (lambda p: p.movw(4, 7), "even"),
        (lambda p: p.ldd(5, Mem("Y", disp=64)), "0..63"),
        (lambda p: p.std(Mem("Z", disp=64), 5), "0..63"),
        (lambda p: p.ldd(5, Mem("Y", disp=-1)), "0..63"),
        (lambda p: p.ldd(5, Mem("X", disp=1)), "Y+q or Z+q"),
        (lambda p: p.adiw(20, 1), "r24, r26, r28 or r30"),
        (lambda p: p.sbiw(25, 1), "r24, r26, r28 or r30"),
        (lambda p: p.adiw(24, 64), "0..63"),
        (lambda p: p.ldi(5, 1), "r16..r31"),
        (lambda p: p.subi(15, 1), "r16..r31"),
        (lambda p: p.ldi(16, 256), "8-bit"),
        (lambda p: p.mulsu(24, 16), "r16..r23"),
        (lambda p: p.mov(32, 1), "r0..r31"),
        (lambda p: p.ld(26, Mem("X", "+")), "undefined"),
        (lambda p: p.ld(27, Mem("X", "-")), "undefined"),
        (lambda p: p.st(Mem("Y", "+"), 28), "undefined"),
        (lambda p: p.ld(5, Mem("Y", disp=3)), "X/Y/Z"),
        (lambda p: p.in_(5, 64), "I/O"),
        (lambda p: p.bst(5, 8), "bit number"),
        (lambda p: p.add(1), "takes 2 operands"),
    ],
)
def test_refused_at_emission(emit, why: str) -> None:
    p = Program()
    with pytest.raises(IsaError, match=re.escape(why)):
        emit(p)
    assert p.items == []  # nothing half-emitted


def test_unknown_mnemonic() -> None:
    with pytest.raises(IsaError, match="unknown instruction 'frob'"):
        Program().emit("frob", 1, 2)
    with pytest.raises(IsaError, match="unknown instruction"):
        Instr.make("mulx", 2, 3)
    with pytest.raises(AttributeError):
        Program().frob(1, 2)


def test_legal_neighbours_accepted() -> None:
    p = Program()
    p.movw(30, 0)
    p.ldd(5, Mem("Y", disp=63))
    p.std(Mem("Z", disp=0), 5)
    for r in (24, 26, 28, 30):
        p.adiw(r, 63)
    p.ldi(16, 255)
    p.ldi(31, -1)
    p.ld(26, Mem("X"))  # no post-increment: defined
    p.ld(25, Mem("X", "+"))
    p.st(Mem("Z", "-"), 26)
    p.mulsu(16, 23)
    p.in_(0, 0x3F)
    p.out(0x3D, 28)
    assert len(p.instructions) == 15


def test_duplicate_label_refused() -> None:
    p = Program()
    p.label("a")
    with pytest.raises(IsaError, match="defined twice"):
        p.label("a")


def test_pointer_window_refuses_x() -> None:
    with pytest.raises(IsaError):
        PointerWindow(Program(), "X")


def test_pointer_window_moves_beyond_63() -> None:
    p = Program()
    w = PointerWindow(p, "Y")
    w.load(2, 10)
    w.load(3, 80)  # re-centres Y (to base+48) with ADIW
    w.load(4, 10)  # and back with SBIW
    w.load(5, 200)  # a jump beyond 63: SUBI/SBCI
    ms = [i.mnemonic for i in p.instructions]
    assert ms == ["ldd", "adiw", "ldd", "sbiw", "ldd", "subi", "sbci", "ldd"]
    assert all(0 <= i.operands[1].disp <= 63 for i in p.instructions if i.mnemonic == "ldd")


# ------------------------------------------------------------------ carry across MUL


def test_carry_consumed_after_mul_refused() -> None:
    p = Program()
    p.add(2, 3)
    p.mul(4, 5)
    with pytest.raises(IsaError, match="MUL"):
        p.adc(6, 7)


@pytest.mark.parametrize("consumer", ["adc", "sbc", "cpc", "rol", "ror", "sbci"])
def test_every_carry_reader_refused_after_mul(consumer: str) -> None:
    p = Program()
    p.sub(18, 19)
    p.muls(16, 17)
    ops = {"adc": (18, 19), "sbc": (18, 19), "cpc": (18, 19), "rol": (18,), "ror": (18,),
           "sbci": (18, 0)}[consumer]
    with pytest.raises(IsaError):
        p.emit(consumer, *ops)


def test_carry_rewritten_after_mul_is_fine() -> None:
    p = Program()
    p.mul(4, 5)
    p.add(2, 0)  # ADD writes a fresh carry: ADC may use it
    p.adc(3, 1)
    p.mul(4, 5)
    p.clc()
    p.rol(6)
    p.mul(4, 5)
    p.label("join")  # control flow may join: the carry state is unknown, not MUL's
    p.adc(7, 8)
    # MOVW, LD/ST, MOV do not touch C: add; movw; ld; adc is legal
    p.add(2, 3)
    p.movw(20, 0)
    p.ld(9, Mem("X", "+"))
    p.adc(10, 11)
    assert len(p.instructions) == 12


def test_extend_rechecks_carry() -> None:
    a = Program()
    a.add(2, 3)
    a.mul(4, 5)
    b = Program()
    b.adc(6, 7)  # fine on its own
    a.extend(Program())
    with pytest.raises(IsaError, match="MUL"):
        a.extend(b)


# ------------------------------------------------------------------ sizes and cycles


@pytest.mark.parametrize(
    "mnemonic, operands, size, avre, avrxm",
    [
        ("add", (2, 3), 2, 1, 1),
        ("movw", (2, 4), 2, 1, 1),
        ("mul", (2, 3), 2, 2, 2),
        ("adiw", (28, 5), 2, 2, 2),
        ("ld", (2, Mem("X", "+")), 2, 2, 2),
        ("ld", (2, Mem("X", "-")), 2, 2, 3),
        ("ldd", (2, Mem("Y", disp=5)), 2, 2, 3),
        ("st", (Mem("Z", "+"), 2), 2, 2, 1),
        ("st", (Mem("Z", "-"), 2), 2, 2, 2),
        ("std", (Mem("Z", disp=9), 2), 2, 2, 2),
        ("lds", (2, 0x100), 4, 2, 3),
        ("sts", (0x100, 2), 4, 2, 2),
        ("push", (2,), 2, 2, 1),
        ("pop", (2,), 2, 2, 2),
        ("in", (0, 0x3F), 2, 1, 1),
        ("out", (0x3D, 28), 2, 1, 1),
        ("rjmp", ("x",), 2, 2, 2),
        ("rcall", ("x",), 2, 3, 2),
        ("call", ("x",), 4, 4, 3),
        ("ret", (), 2, 4, 4),
        ("nop", (), 2, 1, 1),
    ],
)
def test_size_and_cycles(mnemonic, operands, size, avre, avrxm) -> None:
    ins = Instr.make(mnemonic, *operands)
    assert ins.size == size
    assert ins.cycles("avre") == avre
    assert ins.cycles("avrxm") == avrxm


def test_branches_have_no_static_cost() -> None:
    p = Program()
    p.add(2, 3)
    assert p.static_cycles() == 1
    p.brne("x")
    p.label("x")
    assert Instr.make("sbrc", 2, 7).cycles() is None
    assert p.static_cycles() is None
    assert p.size == 4


def test_static_cycles_follow_calls_and_jumps() -> None:
    """A shared subroutine (the no-MUL lowering's) costs once per call, skipped code not at all."""
    p = Program()
    p.rcall("sub")  # 3
    p.rcall("sub")  # 3
    p.rjmp("end")  # 2
    p.label("sub")
    p.nop()  # 1 per call
    p.mul(2, 3)  # 2 per call
    p.ret()  # 4 per call
    p.label("end")
    p.add(2, 3)  # 1
    assert p.static_cycles() == 3 + 3 + 2 + 2 * (1 + 2 + 4) + 1
    loop = Program()
    loop.label("top")
    loop.rjmp("top")
    assert loop.static_cycles() is None
    recursion = Program()
    recursion.label("f")
    recursion.rcall("f")
    assert recursion.static_cycles() is None
    outside = Program()
    outside.rcall("elsewhere")
    assert outside.static_cycles() is None


def test_program_metrics() -> None:
    p = Program()
    p.push(2)
    p.ldd(18, Mem("Y", disp=1))
    p.ld(19, Mem("X", "+"))
    p.mul(18, 19)
    p.movw(20, 0)
    p.st(Mem("Z", "+"), 20)
    p.pop(2)
    assert p.static_cycles() == 2 + 2 + 2 + 2 + 1 + 2 + 2
    assert p.size == 14
    assert p.class_counts() == {"PUSH": 1, "LD": 2, "MUL": 1, "MOVW": 1, "ST": 1, "POP": 1}
    assert p.registers_written == frozenset({0, 1, 2, 18, 19, 20, 21, 26, 27, 30, 31})


def test_implicit_effects() -> None:
    assert Instr.make("mul", 2, 3).writes == {0, 1}
    assert Instr.make("movw", 2, 4).writes == {2, 3}
    assert Instr.make("movw", 2, 4).reads == {4, 5}
    assert Instr.make("ld", 5, Mem("X", "+")).writes == {5, 26, 27}
    assert Instr.make("ldd", 5, Mem("Y", disp=2)).writes == {5}
    assert Instr.make("adc", 5, 6).reads_carry and Instr.make("mul", 5, 6).writes_carry
    assert not Instr.make("movw", 2, 4).writes_carry
    assert not Instr.make("ld", 2, Mem("Z")).writes_carry


def test_rendering() -> None:
    def text(*args, **kw) -> str:
        return instruction_text(Instr.make(*args, **kw))

    assert text("ldd", 5, Mem("Y", disp=12)) == "\tldd r5, Y+12"
    assert text("st", Mem("X", "-"), 7) == "\tst -X, r7"
    assert text("ld", 7, Mem("Z", "+")) == "\tld r7, Z+"
    assert text("brne", "loop3") == "\tbrne .Lloop3"
    assert text("ret") == "\tret"
    assert text("mul", 2, 3, comment="a0*b0").endswith("; a0*b0")


# ------------------------------------------------------------------ determinism

DETERMINISM_SPECS = [
    Spec("mul", 128, "product-scanning"),
    Spec("sqr", 96, "product-scanning"),
    Spec("mul", 160, "operand-caching"),
    Spec("mul", 160, "hybrid"),
    Spec("mul", 128, "karatsuba", levels=2),
    Spec("mul", 96, "karatsuba", variant="branched", levels=2),
    Spec("mul", 96, "karatsuba", levels=3),
    Spec("mul", 128, "rps"),
    Spec("mul", 96, "product-scanning", looped=True),
    Spec("add", 128, "ripple"),
    Spec("mul", 64, "product-scanning", mcu="attiny85"),
]


def _param(spec: Spec):
    return pytest.param(spec, id=f"{spec.symbol}-{spec.levels}-{spec.mcu}")


def _digest(spec: Spec) -> str:
    r = generate(spec)
    return hashlib.sha256((r.asm + "\0" + r.header).encode()).hexdigest()


@pytest.mark.parametrize("spec", [_param(s) for s in DETERMINISM_SPECS])
def test_same_spec_same_text(spec: Spec) -> None:
    one, two = generate(spec), generate(spec)
    assert spec.symbol in one.asm and "avrmp" in one.asm.splitlines()[1]
    assert one.header == two.header
    assert one.asm == two.asm
    assert one == two


_DIGEST_SCRIPT = """
import hashlib, json, sys
from avrmp.routine.files import write_routine
from avrmp.routine.generate import generate
from avrmp.spec import Spec
out = []
for args in json.loads(sys.argv[1]):
    r = generate(Spec(**args))
    out.append(hashlib.sha256((r.asm + "\\0" + r.header).encode()).hexdigest())
print(json.dumps(out))
"""


def _across_processes(specs: list[Spec]) -> None:
    args = json.dumps([
        {"op": s.op, "bits": s.bits, "algo": s.algo, "variant": s.variant, "mcu": s.mcu,
         "levels": s.levels, "looped": s.looped}
        for s in specs
    ])
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", _DIGEST_SCRIPT, args], env=env,
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout))
    assert runs[0] == runs[1] == [_digest(s) for s in specs]


def test_same_text_across_processes() -> None:
    """Output must not depend on set/dict order under string hash randomisation."""
    _across_processes([s for s in DETERMINISM_SPECS if s.algo != "karatsuba"])


def test_same_text_across_processes_karatsuba() -> None:
    _across_processes([s for s in DETERMINISM_SPECS if s.algo == "karatsuba"])


# ------------------------------------------------------------------ per-core timing


def test_the_mcu_core_reaches_the_cost_model(tmp_path, capsys) -> None:
    """An XMEGA part takes the XMEGA column of the instruction table (ST and PUSH one cycle
    less, LDD one more than on the ATmega); simavr has no model of it, so verify refuses it in
    one line instead of reporting a simulated figure."""
    from avrmp.cli import main

    atmega = generate(Spec("mul", 64, "product-scanning"))
    xmega = generate(Spec("mul", 64, "product-scanning", mcu="atxmega128a1"))
    body = [i for i in xmega.asm.splitlines() if i.startswith("\t") and not i.startswith("\t.")]
    lds = sum(1 for i in body if i.startswith("\tldd"))
    sts = sum(1 for i in body if i.startswith(("\tst ", "\tst\t")))
    assert xmega.model_cycles == atmega.model_cycles + lds - sts
    assert "avrxm timing" in xmega.asm and "avrxm" not in atmega.asm
    asm, _ = write_routine(xmega, tmp_path)
    status = main(["verify", str(asm), "--symbol", xmega.spec.symbol, "--bits", "64",
                   "--op", "mul", "--mcu", "atxmega128a1"])
    err = capsys.readouterr().err
    assert status == 2 and "simavr cannot simulate atxmega128a1" in err


@pytest.mark.parametrize("mcu", sorted(MCUS))
def test_the_part_table_agrees_with_avr_gcc(mcu: str) -> None:
    """What avrmp assumes of each part (MUL, JMP/CALL, the return address's size) is what
    avr-gcc builds for it: the ATxmega128A1's 136 KB of flash take a 3-byte PC."""
    proc = subprocess.run(["avr-gcc", f"-mmcu={mcu}", "-dM", "-E", "-x", "assembler-with-cpp",
                           os.devnull], capture_output=True, text=True, check=True)
    defined = set(re.findall(r"#define (__AVR_\w+__)", proc.stdout))
    part = MCUS[mcu]
    assert ("__AVR_HAVE_MUL__" in defined) == part.has_mul
    assert ("__AVR_HAVE_JMP_CALL__" in defined) == part.has_jmp_call
    assert ("__AVR_3_BYTE_PC__" in defined) == (part.pc_bytes == 3)


def test_relax_calls_shortens_only_what_rcall_reaches() -> None:
    """CALL/JMP within 2K words of their label become RCALL/RJMP; one beyond stays; a call to a
    label outside the program (unknown distance) stays."""
    p = Program()
    p.call("near")
    p.call("far")
    p.call("elsewhere")
    p.jmp("near")
    p.label("near")
    for _ in range(2050):
        p.nop()
    p.label("far")
    p.relax_calls()
    assert [i.mnemonic for i in p.instructions[:4]] == ["rcall", "call", "call", "rjmp"]
    assert p.size == 2 * (1 + 2 + 2 + 1 + 2050)


def test_holds_sp_only_while_nothing_can_have_changed_it() -> None:
    """The pair read from SP still holds it unless it was written, SP moved or a jump from
    before the read lands after it."""

    def holds_after(change: str = "") -> bool:
        p = Program()
        if change == "jump":
            p.rjmp("later")
        read_sp(p, 28)
        p.ldd(2, Mem("Y", disp=5))
        if change == "push":
            p.push(2)
        if change == "write":
            p.adiw(28, 1)
        p.label("later")
        p.add(2, 3)
        return holds_sp(p, 28)

    assert holds_after()
    assert not any(holds_after(change) for change in ("push", "write", "jump"))
    assert not holds_sp(Program(), 28)
