"""What a technique hands to the ABI wrapper: a kernel body and where it wants its arguments."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..program.program import Program
from ..tuning.choices import Decision


@dataclass
class Kernel:
    """A kernel body plus the register pair in which it expects each pointer argument on entry.

    `args` maps argument names ('r', 'a', 'b') to the even register where the wrapper must put that
    pointer before the core starts; arguments left out stay where avr-gcc put them (abi.ARG_REGS).
    """

    body: Program
    args: dict[str, int]
    notes: list[str] = field(default_factory=list)
    # Bytes of stack frame the caller reserves for the body (a subroutine of a large routine whose
    # frame is allocated once, by the routine's top level; see karatsuba/large.py).
    caller_frame: int = 0
    # A subroutine that leaves its top bytes (this many, the last quarter of its result) to the
    # caller: (d, f) in r24:r25 (karatsuba/combine.py, emit_top_deferred).
    top_deferred: int = 0
    # With top_deferred: the register pair that holds the result pointer on return (28: Y, 30: Z).
    r_pair: int = 0
    # The decisions that built it (routine.generate records them; see tuning.choices).
    choices: list[Decision] = field(default_factory=list)
