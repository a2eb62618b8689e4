"""Which timing class of isa.TIMINGS one ARM-state instruction falls in, and what it costs as it
executes: the trace timing of the emulator (verify/arm_emulator.py) reads the same table as the
builder's static count.

`decode` reads what the word alone says (class, condition, registers moved, which register holds
the multiplier operand, whether it writes SP); `classify` adds what the machine state says just
before the instruction runs (whether its condition passes on the CPSR flags, the multiplier's
steps m on the value of Rs).  An instruction whose condition fails costs 1S, one clock: the
manual's figure, the cost of the "data" class.

Modelled: data processing (immediate, register, shift by immediate or by register, writing PC),
MRS and MSR (data processing, 1S), MUL, MLA, UMULL, UMLAL, SMULL, SMLAL, LDR/STR (word and byte,
and the halfword and signed transfers LDRH, STRH, LDRSB, LDRSH, which the manual times as LDR
and STR), LDM/STM, B, BL and BX.  Refused with an AvrmpError: Thumb state, SWI, SWP, the
coprocessor and undefined spaces, condition NV, an empty register list, and a data-processing
instruction shifting by a register while writing PC (2S + 1N + 1I, a class TIMINGS lacks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import AvrmpError
from .isa import TIMINGS, multiplier_steps

AL = 0xE
SP = 13
PC = 15
THUMB_BIT = 1 << 5
SKIPPED = "data"  # the class whose cost (1S) a condition-failed instruction takes


@dataclass(frozen=True)
class Decoded:
    """What one instruction word says about its timing, before it runs."""

    word: int
    name: str  # the instruction's kind, for messages: "umull", "ldm", "data", ...
    timing: str  # key of TIMINGS
    cond: int = AL
    registers: int = 1  # LDM/STM: registers moved
    rs: int | None = None  # multiplies: the register holding the multiplier operand
    signed: bool = False  # multiplies: whether m counts all-one top bits as well as all-zero
    writes_sp: bool = False  # whether it may change SP (for the lowest SP a call reaches)


@dataclass(frozen=True)
class Executed:
    """One instruction as it executes: its class, whether its condition passed, the registers
    an LDM/STM moves and the multiplier's steps m (0 unless a multiply)."""

    timing: str
    passed: bool = True
    registers: int = 1
    m: int = 0


def condition_passes(cond: int, cpsr: int) -> bool:
    """The ARM condition field `cond` (0..14) against the N Z C V flags of `cpsr`."""
    n, z, c, v = (cpsr >> 31) & 1, (cpsr >> 30) & 1, (cpsr >> 29) & 1, (cpsr >> 28) & 1
    base = cond >> 1
    if base == 0:
        ok = z
    elif base == 1:
        ok = c
    elif base == 2:
        ok = n
    elif base == 3:
        ok = v
    elif base == 4:
        ok = c and not z
    elif base == 5:
        ok = n == v
    elif base == 6:
        ok = not z and n == v
    elif cond == AL:
        return True
    else:
        raise AvrmpError(f"condition field 0x{cond:x} (NV) is not an ARMv4T condition: "
                         "use AL or a real condition")
    return bool(ok) != bool(cond & 1)


def _refuse(word: int, what: str) -> AvrmpError:
    return AvrmpError(f"instruction 0x{word:08x} is {what}, which the ARM7TDMI timing model does "
                      "not cover: use the instructions listed in target/arm7tdmi/decode.py")


def _multiply(word: int, cond: int) -> Decoded:
    rs = (word >> 8) & 0xF
    if word & (1 << 23):  # long: U bit 22 (1 = signed), A bit 21
        signed, acc = bool(word & (1 << 22)), bool(word & (1 << 21))
        name = ("s" if signed else "u") + ("mlal" if acc else "mull")
        return Decoded(word, name, "mlal" if acc else "mull", cond, rs=rs, signed=signed)
    acc = bool(word & (1 << 21))
    return Decoded(word, "mla" if acc else "mul", "mla" if acc else "mul", cond, rs=rs,
                   signed=True)


def _data_processing(word: int, cond: int) -> Decoded:
    opcode, s_bit = (word >> 21) & 0xF, word & (1 << 20)
    rd = (word >> 12) & 0xF
    if 8 <= opcode <= 11 and not s_bit:  # the TST/TEQ/CMP/CMN space without S: MRS, MSR
        if word & 0x0FBF_0FFF == 0x010F_0000:
            return Decoded(word, "mrs", "data", cond, writes_sp=rd == SP)
        if word & 0x0FB0_FFF0 == 0x0120_F000 or word & 0x0FB0_F000 == 0x0320_F000:
            return Decoded(word, "msr", "data", cond)
        raise _refuse(word, "not an ARMv4T instruction (CLZ, BLX, QADD and the like are ARMv5)")
    writes = not 8 <= opcode <= 11
    by_register = not word & (1 << 25) and word & 0x10
    if writes and rd == PC:
        if by_register:
            raise _refuse(word, "a data-processing instruction writing PC with a shift by a "
                          "register (2S + 1N + 1I)")
        return Decoded(word, "data_to_pc", "data_to_pc", cond)
    timing = "data_shift_by_register" if by_register else "data"
    return Decoded(word, timing, timing, cond, writes_sp=writes and rd == SP)


def _transfer(word: int, cond: int, halfword: bool = False) -> Decoded:
    load, rd, rn = bool(word & (1 << 20)), (word >> 12) & 0xF, (word >> 16) & 0xF
    writeback = bool(word & (1 << 21)) or not word & (1 << 24)  # W, or post-indexed
    writes_sp = (load and rd == SP) or (writeback and rn == SP)
    name = ("ldr" if load else "str") + ("h" if halfword else "")
    if load and rd == PC:
        return Decoded(word, name + "_pc", "ldr_pc", cond, writes_sp=writes_sp)
    return Decoded(word, name, "ldr" if load else "str", cond, writes_sp=writes_sp)


def _block(word: int, cond: int) -> Decoded:
    load, rn, regs = bool(word & (1 << 20)), (word >> 16) & 0xF, word & 0xFFFF
    if not regs:
        raise _refuse(word, "an LDM/STM with an empty register list")
    if word & (1 << 22):
        raise _refuse(word, "an LDM/STM of the user-mode registers or restoring CPSR (^)")
    n = regs.bit_count()
    writes_sp = (bool(word & (1 << 21)) and rn == SP) or (load and bool(regs & (1 << SP)))
    if load:
        timing = "ldm_pc" if regs & (1 << PC) else "ldm"
        return Decoded(word, timing, timing, cond, registers=n, writes_sp=writes_sp)
    return Decoded(word, "stm", "stm", cond, registers=n, writes_sp=writes_sp)


def decode(word: int) -> Decoded:
    """The timing class and static facts of one ARM-state instruction word; AvrmpError for an
    instruction the model does not cover."""
    word &= 0xFFFF_FFFF
    cond = word >> 28
    if cond == 0xF:
        raise _refuse(word, "condition NV (unpredictable on ARMv4T)")
    if word & 0x0FFF_FFF0 == 0x012F_FF10:
        return Decoded(word, "bx", "branch", cond)
    space = (word >> 25) & 7
    if space == 0:
        if word & 0x0FC0_00F0 == 0x0000_0090 or word & 0x0F80_00F0 == 0x0080_0090:
            return _multiply(word, cond)
        if word & 0x0FB0_0FF0 == 0x0100_0090:
            raise _refuse(word, "SWP (a swap)")
        if word & 0x90 == 0x90:  # bits 7 and 4: halfword and signed transfers if bits 6:5
            if not word & 0x60:
                raise _refuse(word, "in the undefined instruction space")
            return _transfer(word, cond, halfword=True)
        return _data_processing(word, cond)
    if space == 1:
        return _data_processing(word, cond)
    if space == 2 or (space == 3 and not word & 0x10):
        return _transfer(word, cond)
    if space == 4:
        return _block(word, cond)
    if space == 5:
        return Decoded(word, "bl" if word & (1 << 24) else "b", "branch", cond)
    if space == 3:
        raise _refuse(word, "in the undefined instruction space")
    if word & 0x0F00_0000 == 0x0F00_0000:
        raise _refuse(word, "SWI (a software interrupt)")
    raise _refuse(word, "a coprocessor instruction")


def execute(d: Decoded, rs_value: int, cpsr: int) -> Executed:
    """`d` as it executes with the multiplier operand `rs_value` (read only for multiplies) and
    the flags of `cpsr`."""
    if d.cond != AL and not condition_passes(d.cond, cpsr):
        return Executed(d.timing, False, d.registers)
    m = multiplier_steps(rs_value, d.signed) if d.rs is not None else 0
    return Executed(d.timing, True, d.registers, m)


def classify(word: int, regs: Sequence[int], cpsr: int) -> Executed:
    """One ARM-state instruction about to execute, given the registers r0..r15 (`regs[i]`) and
    the CPSR: its timing class, whether its condition passes, the registers an LDM/STM moves, m
    for a multiply.  AvrmpError in Thumb state or for an instruction the model does not cover."""
    if cpsr & THUMB_BIT:
        raise AvrmpError("the CPU is in Thumb state: the ARM7TDMI model times ARM state only; "
                         "return to ARM state (BX to an even address)")
    d = decode(word)
    return execute(d, regs[d.rs] if d.rs is not None else 0, cpsr)


def cycles(executed: Executed) -> int:
    """Clocks with zero-wait-state memory, from TIMINGS (a failed condition: 1S)."""
    if not executed.passed:
        return TIMINGS[SKIPPED].cycles()
    return TIMINGS[executed.timing].cycles(executed.m, executed.registers)
