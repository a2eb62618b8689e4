"""The ARM7TDMI timing model, instruction by instruction, against the manual's figures.

Every case is a tiny routine whose core (between NAME__core_begin and NAME__core_end) is the one
instruction under test; it runs in the emulator and its core cycles must equal the figure the
ARM7TDMI Technical Reference Manual (ARM DDI 0210C, chapter 6) gives at zero wait states
(S = N = I = 1 clock), written out here by hand, not read from isa.TIMINGS.  At entry r0 points
to a 32-byte result buffer and r1 to the operand; the other registers are random.

Then: the condition of every condition code, evaluated by decode against unicorn's own execution
on flags written by MSR and by an ADDS just before; multiplier_steps at its boundaries; and the
instructions decode refuses."""

from __future__ import annotations

import pytest

from avrmp.errors import AvrmpError
from avrmp.target.arm7tdmi.decode import (
    classify,
    condition_passes,
    cycles,
    decode,
)
from avrmp.target.arm7tdmi.isa import WORST_M, multiplier_steps
from avrmp.verify.arm_emulator import ArmCall, ArmEmulator
from avrmp.verify.arm_toolchain import build_arm, read_firmware

RS = {  # multiplier operands (Rs) and the m the manual gives them
    "m1": 0x0000_00FF, "m2": 0x0000_0100, "m2b": 0x0000_FFFF, "m3": 0x0001_0000,
    "m3b": 0x00FF_FFFF, "m4": 0x0100_0000, "m4b": 0x8000_0000,
    "ones": 0xFFFF_FFFF, "neg1": 0xFFFF_FF80, "neg2": 0xFFFF_8000, "neg3": 0xFF80_0000,
}


def mul_cases(mnemonic: str, operands: str, extra: int, signed: bool) -> list[tuple]:
    """One case per multiplier operand: cycles = 1 (the S cycle) + m + extra I cycles."""
    out = []
    for key, rs in RS.items():
        m = multiplier_steps(rs, signed)
        expected = {"m1": 1, "m2": 2, "m2b": 2, "m3": 3, "m3b": 3, "m4": 4, "m4b": 4,
                    "ones": 1 if signed else 4, "neg1": 1 if signed else 4,
                    "neg2": 2 if signed else 4, "neg3": 3 if signed else 4}[key]
        assert m == expected
        out.append((f"{mnemonic}_{key}", f"ldr r3, ={rs:#x}", f"{mnemonic} {operands}",
                    1 + expected + extra))
    return out


# (name, setup, core, cycles by the manual at zero wait states)
CASES = [
    # data processing: 1S; with a register-specified shift: 1S + 1I; writing PC: 2S + 1N
    ("add", "", "add r1, r2, r3", 1),
    ("mov_imm", "", "mov r1, #5", 1),
    ("add_shift_imm", "", "add r1, r2, r3, lsl #3", 1),
    ("adds", "", "adds r1, r2, r3", 1),
    ("cmp", "", "cmp r2, r3", 1),
    ("mrs", "", "mrs r1, cpsr", 1),
    ("add_shift_reg", "", "add r1, r2, r3, lsl r12", 2),
    ("mov_ror_reg", "", "mov r1, r2, ror r3", 2),
    ("add_pc", "", "add pc, pc, #0\n    mov r0, r0", 3),  # skips the mov to core_end
    ("mov_pc", "adr r3, {name}__core_end", "mov pc, r3", 3),
    # LDR: 1S + 1N + 1I; LDR PC: 2S + 2N + 1I; STR: 2N (halfword and byte alike)
    ("ldr", "", "ldr r1, [r0]", 3),
    ("ldr_post", "", "ldr r1, [r0], #4", 3),
    ("ldrb", "", "ldrb r1, [r0, #1]", 3),
    ("ldrh", "", "ldrh r1, [r0, #2]", 3),
    ("ldrsb", "", "ldrsb r1, [r0, #3]", 3),
    ("ldr_pc", "str lr, [r0]", "ldr pc, [r0]", 5),
    ("str", "", "str r1, [r0]", 2),
    ("strb", "", "strb r1, [r0, #1]", 2),
    ("strh", "", "strh r1, [r0, #2]", 2),
    # LDM: nS + 1N + 1I = n + 2; with PC: (n+1)S + 2N + 1I = n + 4; STM: (n-1)S + 2N = n + 1
    ("ldm1", "", "ldmia r0, {r1}", 3),
    ("ldm2", "", "ldmia r0, {r1, r2}", 4),
    ("ldm3", "", "ldmia r0, {r1, r2, r3}", 5),
    ("ldm4", "", "ldmia r0, {r1, r2, r3, r12}", 6),
    ("ldm_pc1", "str lr, [r0]", "ldmia r0, {pc}", 5),
    ("ldm_pc3", "str lr, [r0, #8]", "ldmia r0, {r1, r2, pc}", 7),
    ("pop_pc", "push {r4, lr}", "pop {r4, pc}", 6),
    ("stm1", "", "stmia r0, {r1}", 2),
    ("stm2", "", "stmia r0, {r1, r2}", 3),
    ("stm3", "", "stmia r0, {r1, r2, r3}", 4),
    ("stm4", "", "stmia r0, {r1, r2, r3, r12}", 5),
    ("push4", "mov r12, sp", "push {r4, r5, r6, r7}", 5),
    # B, BL, BX: 2S + 1N
    ("b", "", "b {name}__core_end", 3),
    ("bl", "mov r12, lr", "bl {name}__core_end", 3),
    ("bx", "adr r3, {name}__core_end", "bx r3", 3),
    ("beq_taken", "cmp r0, r0", "beq {name}__core_end", 3),
    # a failed condition: 1S, whatever the instruction
    ("bne_skipped", "cmp r0, r0", "bne {name}__core_end", 1),
    ("addne_skipped", "cmp r0, r0", "addne r1, r2, r3, lsl r12", 1),
    ("addeq_run", "cmp r0, r0", "addeq r1, r2, r3, lsl r12", 2),
    ("ldrne_skipped", "cmp r0, r0", "ldrne r1, [r0]", 1),
    ("ldmne_skipped", "cmp r0, r0", "ldmne r0, {r1, r2, r3}", 1),
    ("umlalne_skipped", "ldr r3, =0x12345678\n    cmp r0, r0", "umlalne r1, r2, r12, r3", 1),
    ("ldrne_pc_skipped", "cmp r0, r0", "ldrne pc, [r0]", 1),
    # MUL: 1S + mI; MLA: 1S + (m+1)I; UMULL/SMULL: 1S + (m+1)I; UMLAL/SMLAL: 1S + (m+2)I
    *mul_cases("mul", "r1, r2, r3", 0, signed=True),
    *mul_cases("mla", "r1, r2, r3, r12", 1, signed=True),
    *mul_cases("umull", "r1, r2, r12, r3", 1, signed=False),
    *mul_cases("smull", "r1, r2, r12, r3", 1, signed=True),
    *mul_cases("umlal", "r1, r2, r12, r3", 2, signed=False),
    *mul_cases("smlal", "r1, r2, r12, r3", 2, signed=True),
]

AFTER = {"bl": "bx r12", "push4": "mov sp, r12\n    bx lr", "pop_pc": "bx lr"}

CONDITIONS = ["eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt",
              "le", "al"]


def routine(name: str, setup: str, core: str, after: str = "bx lr") -> str:
    setup, core = setup.replace("{name}", name), core.replace("{name}", name)
    return "\n".join([
        "    .align 2", f"    .global {name}", f"    .type {name}, %function", f"{name}:",
        f"    {setup}", f"{name}__core_begin:", f"    {core}",
        f"{name}__core_end:", f"    {after}", f"    .size {name}, .-{name}", "    .ltorg", ""])


def condition_routines() -> list[str]:
    """For each condition: flags from MSR (operand word 0), or from ADDS of operand words 1 and
    2; then ORR<cond> with a shift by a register (2 cycles if it runs, 1 if not), its result
    (3, or 0 if it did not run) stored to r[0]."""
    out = []
    for cond in CONDITIONS:
        for how, flags in (("msr", "ldr r2, [r1]\n    msr cpsr_f, r2"),
                           ("adds", "ldr r2, [r1, #4]\n    ldr r3, [r1, #8]\n    adds r2, r2, r3")):
            setup = f"mov r3, #0\n    mov r12, #1\n    {flags}\n    mov r3, #0"
            out.append(routine(f"cond_{how}_{cond}", setup, f"orr{cond} r3, r12, r12, lsl r12",
                               "str r3, [r0]\n    bx lr"))
    return out


@pytest.fixture(scope="module")
def elf(tmp_path_factory):
    text = ["    .syntax unified", "    .arm", "    .text"]
    text += [routine(name, setup, core, AFTER.get(name, "bx lr"))
             for name, setup, core, _ in CASES]
    text += condition_routines()
    path = tmp_path_factory.mktemp("arm_timing") / "timing.S"
    path.write_text("\n".join(text) + "\n")
    return build_arm(path, CASES[0][0], path.parent).elf


def run(elf, name: str, operand: bytes = bytes(16), seed: int = 1):
    # (an ARM caller: some cases return by loading PC, which does not interwork on this core)
    m = ArmEmulator(read_firmware(elf, name)).call(ArmCall((operand,), 32, seed=seed,
                                                           thumb_caller=False))
    assert not m.error, m.error
    return m


@pytest.mark.parametrize("name, setup, core, expected", CASES, ids=[c[0] for c in CASES])
def test_instruction_cycles_match_the_manual(elf, name, setup, core, expected) -> None:
    for seed in (1, 2):  # two start states: random registers and flags must not matter
        m = run(elf, name, seed=seed)
        assert m.core_cycles == expected, (name, m.core_cycles, expected)


def test_abi_cycles_count_from_entry_to_the_return_included(elf) -> None:
    m = run(elf, "ldm3")
    assert m.abi_cycles == 5 + 3  # the LDM, then BX LR (2S + 1N)
    m = run(elf, "umull_m2b")
    assert m.abi_cycles == 3 + 4 + 3  # LDR r3 from the literal pool, UMULL (m = 2), BX LR
    assert m.fixed_m_cycles == m.abi_cycles + WORST_M - 2
    m = run(elf, "umull_m4")
    assert m.abi_cycles == 1 + 6 + 3  # MOV r3 (the constant fits an immediate), UMULL, BX LR
    assert m.fixed_m_cycles == m.abi_cycles
    m = run(elf, "umull_m1")
    assert m.fixed_m_cycles == m.abi_cycles + WORST_M - 1


FLAG_SUMS = [(0, 0), (1, 1), (0x7FFF_FFFF, 1), (0x8000_0000, 0x8000_0000), (0xFFFF_FFFF, 1),
             (0xFFFF_FFFF, 0xFFFF_FFFF), (0x8000_0000, 0xFFFF_FFFF), (0x4000_0000, 0x4000_0000)]


def adds_flags(a: int, b: int) -> int:
    s = a + b
    r = s & 0xFFFF_FFFF
    n, z, c = r >> 31, r == 0, s >> 32
    v = ((a ^ r) & (b ^ r)) >> 31
    return n << 31 | z << 30 | c << 29 | v << 28


@pytest.mark.parametrize("cond", CONDITIONS)
def test_conditions_agree_with_the_cpu(elf, cond) -> None:
    msr = ArmEmulator(read_firmware(elf, f"cond_msr_{cond}"))
    for flags in range(16):
        m = msr.call(ArmCall(((flags << 28).to_bytes(4, "little") + bytes(12),), 32, seed=flags))
        ran = condition_passes(CONDITIONS.index(cond), flags << 28)
        assert m.result[0] == (3 if ran else 0), (cond, flags)
        assert m.core_cycles == (2 if ran else 1), (cond, flags)
    adds = ArmEmulator(read_firmware(elf, f"cond_adds_{cond}"))
    for a, b in FLAG_SUMS:
        operand = (b"\0" * 4 + a.to_bytes(4, "little") + b.to_bytes(4, "little") + bytes(4))
        m = adds.call(ArmCall((operand,), 32, seed=a ^ b))
        ran = condition_passes(CONDITIONS.index(cond), adds_flags(a, b))
        assert m.result[0] == (3 if ran else 0), (cond, hex(a), hex(b))
        assert m.core_cycles == (2 if ran else 1), (cond, hex(a), hex(b))


@pytest.mark.parametrize("rs, signed, m", [
    (0, False, 1), (0xFF, False, 1), (0x100, False, 2), (0xFFFF, False, 2), (0x1_0000, False, 3),
    (0xFF_FFFF, False, 3), (0x100_0000, False, 4), (0xFFFF_FFFF, False, 4),
    (0xFFFF_FF00, False, 4), (0xFFFF_FFFF, True, 1), (0xFFFF_FF00, True, 1),
    (0xFFFF_FEFF, True, 2), (0xFFFF_0000, True, 2), (0xFFFE_FFFF, True, 3),
    (0xFF00_0000, True, 3), (0xFEFF_FFFF, True, 4), (0x8000_0000, True, 4),
    (0x7FFF_FFFF, True, 4), (0xFF, True, 1), (0x100, True, 2), (-1, True, 1), (-256, True, 1),
    (-257, True, 2),
])
def test_multiplier_steps_boundaries(rs, signed, m) -> None:
    assert multiplier_steps(rs, signed) == m


def test_classify_reads_rs_and_flags() -> None:
    regs = [0] * 16
    regs[3] = 0x0001_0000
    umull = 0xE0821392  # umull r1, r2, r2, r3
    assert decode(umull).rs == 3
    assert cycles(classify(umull, regs, 0)) == 1 + 3 + 1
    regs[3] = 0xFFFF_FFFF
    assert cycles(classify(umull, regs, 0)) == 1 + 4 + 1
    assert cycles(classify(0xE0C21392, regs, 0)) == 1 + 1 + 1  # smull: all ones is m = 1
    assert cycles(classify(0x00821392, regs, 0)) == 1  # umulleq with Z clear: skipped, 1S
    assert cycles(classify(0x00821392, regs, 1 << 30)) == 1 + 4 + 1  # Z set: it runs
    addne = 0x10811002  # addne r1, r1, r2
    assert not classify(addne, regs, 1 << 30).passed
    assert cycles(classify(addne, regs, 1 << 30)) == 1


@pytest.mark.parametrize("word, what", [
    (0xEF000000, "SWI"), (0xE1020091, "SWP"), (0xEE010F10, "coprocessor"),
    (0xF1A00000, "NV"), (0xE7F000F0, "undefined"), (0xE8900000, "empty register list"),
    (0xE08FF312, "writing PC with a shift by a register"), (0xE8D00003, "(^)"),
    (0xE16F0F11, "ARMv5"), (0xE12FFF33, "ARMv5"),  # CLZ, BLX (register)
])
def test_decode_refuses_what_it_does_not_model(word, what) -> None:
    with pytest.raises(AvrmpError, match="timing model does not cover") as exc:
        decode(word)
    assert what in str(exc.value)


def test_classify_refuses_thumb_state() -> None:
    with pytest.raises(AvrmpError, match="Thumb"):
        classify(0xE0811002, [0] * 16, 0x20)
