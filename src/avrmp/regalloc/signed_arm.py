"""A signed arm's two copies: the adding one and the subtracting one, NOP-balanced."""

from __future__ import annotations

from ..program.cycles import static_cycles
from ..program.items import Label
from ..program.program import Program
from ..target.avr.isa import Instr
from .vprogram import SUBTRACTING, AllocationError

BRTS_REACH = 63  # words a BRTS can jump forward


def emit_signed_arm(out: Program, start: int, signed: dict[int, tuple | None],
                    labels: Program) -> None:
    """Turn out.items[start:] (the adding arm) into: a jump to it if T is set; its subtracting
    copy (signed: position -> alt, see VInstr); RJMP past it; the arm.  Both paths take the same
    cycles (NOPs balance them).  An arm beyond BRTS's reach is entered by BRTC over an RJMP
    instead."""
    arm = out.items[start:]
    if any(isinstance(item, Label) for item in arm):
        raise AllocationError("a signed arm cannot contain labels")
    del out.items[start:]
    sub_path, add_path, join = (labels.new_label(h) for h in ("subM", "addM", "join"))
    near = sum(i.size for i in arm if isinstance(i, Instr)) // 2 + 1 <= BRTS_REACH
    if near:
        out.brts(add_path, comment="T set: add")
    else:
        out.brtc(sub_path, comment="T clear: subtract")
        out.rjmp(add_path)
        out.label(sub_path)
    sub, add = _copy(arm, start, signed, subtracting=True), _copy(arm, start, signed, False)
    # Entry: BRTS falls through (1) to the subtracting copy or jumps (2) to the adding one; BRTC
    # jumps (2) to the subtracting copy or falls through (1) to an RJMP (2) to the adding one.
    lag = (static_cycles(sub, nominal=True) + (3 if near else 4)) \
        - (static_cycles(add, nominal=True) + (2 if near else 3))
    balance = Instr.make("nop", comment="balance: both paths take the same cycles")
    out.items.extend(sub + [balance] * max(0, -lag))
    out.rjmp(join)
    out.label(add_path)
    out.items.extend(add + [balance] * max(0, lag))
    out.label(join)


def _copy(arm: list, start: int, signed: dict[int, tuple | None], subtracting: bool) -> list:
    """The arm as emitted (adding) or with each signed instruction replaced by its alternative
    (subtracting: SUB/SBC for ADD/ADC, or what VProgram.arm_pair gave, or nothing)."""
    items = []
    for k, item in enumerate(arm, start):
        if not (isinstance(item, Instr) and subtracting and k in signed):
            items.append(item)
        elif signed[k] is None:
            items.append(Instr.make(SUBTRACTING[item.mnemonic], *item.operands,
                                    comment=item.comment))
        elif signed[k]:
            alt = signed[k]
            items.append(Instr.make(alt[0], *alt[1], comment=item.comment))
    return items
