"""Multiplication whose time does not depend on the data, on a multiplier that stops early.

The ARM7TDMI's UMULL and UMLAL take m = 1..4 steps by the top bytes of Rs (seed 001, footnote
5).  Here Rs is always a' = a | 2^31, whose top byte is never zero, so m = 4 on every input.
What the forced bit adds is taken back in each product: a'*b = a*b + x*2^31 with
x = b & mask, mask = all ones when a's top bit was clear (MVN mask, a, ASR #31), else zero.
Every instruction costs the same clocks whatever its operands, so the cycles are constant."""

from __future__ import annotations

from ...program.arm import ArmProgram

FORCED_BIT = 1 << 31


def force_multiplier(prog: ArmProgram, a: int, mask: int) -> None:
    """mask = all ones if a's top bit is clear; a |= 2^31 (a's top byte is never zero now)."""
    prog.mov(mask, f"r{a}, asr #31", "all ones if the multiplier's top bit is clear",
             mnemonic="mvn")
    prog.alu_imm("orr", a, a, FORCED_BIT, "multiplier | 2^31: it takes 4 steps")


def row_step(prog: ArmProgram, word: int, carry: int, a: int, b: int, mask: int, x: int,
             zero: int, fresh: bool, first: bool) -> None:
    """(carry:word) = word + carry + a*b in 12 cycles, a = a' forced (force_multiplier): the
    pair becomes word + carry - x*2^31 modulo 2^64 first, then UMLAL adds a'*b, which is at
    least x*2^31, so the modular sum is the true one.  fresh, first and zero as in
    words.row_step: a fresh step lends zero's register to the high word."""
    prog.alu("and", x, b, mask, "x = the multiplicand if the forced bit was not the "
             "multiplier's own, else 0")
    if fresh:
        prog.umull(word, carry if first else zero, b, a, "forced multiplier * multiplicand")
        if not first:
            prog.alu("adds", word, word, carry, "+ c")
            prog.alu_imm("adc", carry, zero, 0, "c: the high word and the carry")
        prog.alu("subs", word, word, f"r{x}, lsl #31", "- x*2^31")
        prog.alu("sbc", carry, carry, f"r{x}, lsr #1")
        return
    if first:
        prog.alu("subs", word, word, f"r{x}, lsl #31", "R - x*2^31")
        prog.alu("sbc", carry, zero, f"r{x}, lsr #1")
    else:
        prog.alu("adds", word, word, carry, "R + c")
        prog.alu("sbc", carry, zero, f"r{x}, lsr #1", "carry - 1 - x/2")
        prog.alu("subs", word, word, f"r{x}, lsl #31", "- x*2^31, low word")
        prog.alu_imm("adc", carry, carry, 0, "+ 1 - borrow")
    prog.umlal(word, carry, b, a, "+ forced multiplier * multiplicand: below 2^64")
