"""The stack pointer: read it, write it atomically, move it to allocate or release a frame."""

from __future__ import annotations

from ..program.items import Label
from ..program.program import Emitter, Program
from ..target.avr.isa import SPH, SPL, SREG, Instr
from .pointers import add_to_pair

MOVES_SP = {"push", "pop", "call", "rcall", "icall", "ret", "reti"}


def read_sp(p: Emitter, lo: int, comment: str = "") -> None:
    """The pair at lo = SP."""
    p.in_(lo, SPL, comment=comment)
    p.in_(lo + 1, SPH)


def write_sp(p: Emitter, lo: int = 28) -> None:
    """SP = the pair at lo (default Y), safe against interrupts: both halves written with the I
    flag clear, then SREG restored.  (avr-gcc restores SREG between the halves, counting on the
    instruction an AVR runs before it takes an interrupt; an XMEGA protects SP after a write to
    SPL, not to SPH, so that order is safe only where that count holds: this one, in the same
    cycles, is safe on both.)  Uses r0."""
    p.in_(0, SREG, comment="SREG")
    p.cli()
    p.out(SPL, lo, comment="SPL")
    p.out(SPH, lo + 1, comment="SPH")
    p.out(SREG, 0, comment="SREG (I flag back)")


def holds_sp(p: Program, lo: int) -> bool:
    """Whether the pair at lo still holds SP at the end of p: its last writes are read_sp's two
    INs, SP has not moved since (no PUSH, POP, call or SP write), and no jump from before them
    lands after them."""
    items = p.items
    writes = [i for i, it in enumerate(items)
              if isinstance(it, Instr) and it.writes & {lo, lo + 1}]
    if len(writes) < 2:
        return False
    i, j = writes[-2:]
    if (items[i].mnemonic, items[i].operands) != ("in", (lo, SPL)) \
            or (items[j].mnemonic, items[j].operands) != ("in", (lo + 1, SPH)):
        return False
    after = items[i:]
    if any(isinstance(it, Instr) and (it.mnemonic in MOVES_SP or it.mnemonic == "out"
                                      and it.operands[0] in (SPL, SPH)) for it in after):
        return False
    landing = {it.name for it in after if isinstance(it, Label)}
    return not any(isinstance(it, Instr) and it.operands and it.operands[-1] in landing
                   for it in items[:i])


SHORT_MOVE = 4  # bytes up to which PUSHes or POPs (2 cycles each) beat an SP write (9)


def move_sp_short(p: Emitter, lo: int, delta: int, sbiw: bool = True) -> None:
    """SP += delta: by PUSHes (allocating) or POPs (releasing) of r0 for up to SHORT_MOVE bytes,
    else by move_sp through the pair at lo."""
    if abs(delta) > SHORT_MOVE:
        move_sp(p, lo, delta, sbiw=sbiw)
        return
    for _ in range(abs(delta)):
        if delta < 0:
            p.push(0, comment="reserve")
        else:
            p.pop(0)


def move_sp(p: Emitter, lo: int, delta: int, sbiw: bool = True,
            holding_sp: bool = False) -> None:
    """SP += delta through the pair at lo (which ends holding the new SP): negative to allocate
    a frame, positive to release it.  holding_sp: the pair holds SP already (holds_sp)."""
    if not holding_sp:
        read_sp(p, lo)
    add_to_pair(p, lo, delta, sbiw=sbiw)
    write_sp(p, lo)
