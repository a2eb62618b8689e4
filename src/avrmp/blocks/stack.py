"""The stack pointer: read it, write it atomically, move it to allocate or release a frame."""

from __future__ import annotations

from ..program.program import Emitter
from ..target.avr.isa import SPH, SPL, SREG
from .pointers import add_to_pair


def read_sp(p: Emitter, lo: int, comment: str = "") -> None:
    """The pair at lo = SP."""
    p.in_(lo, SPL, comment=comment)
    p.in_(lo + 1, SPH)


def write_sp(p: Emitter, lo: int = 28) -> None:
    """SP = the pair at lo (default Y), safe against interrupts: the I flag is restored by the
    OUT to SREG, and the AVR runs one more instruction (the OUT to SPL) before it takes an
    interrupt.  Uses r0."""
    p.in_(0, SREG, comment="SREG")
    p.cli()
    p.out(SPH, lo + 1, comment="SPH")
    p.out(SREG, 0, comment="SREG (I flag back)")
    p.out(SPL, lo, comment="SPL")


def move_sp(p: Emitter, lo: int, delta: int, sbiw: bool = True) -> None:
    """SP += delta through the pair at lo (which ends holding the new SP): negative to allocate
    a frame, positive to release it."""
    read_sp(p, lo)
    add_to_pair(p, lo, delta, sbiw=sbiw)
    write_sp(p, lo)
