"""A signed arm's two copies: the adding one and the subtracting one, NOP-balanced; and, once
the registers are final, what the copies share at their start and end emitted once."""

from __future__ import annotations

from dataclasses import dataclass

from ..program.cycles import static_cycles
from ..program.items import Label
from ..program.program import Program
from ..target.avr.isa import OPS, Instr
from .vprogram import SUBTRACTING, AllocationError
from .webs import label_positions

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


def merge_shared_ends(items: list) -> list:
    """items with each signed arm's copies sharing their start and end once: what both copies
    begin with (up to an instruction that differs or writes T) goes before the branch, what
    both end with (before the balancing NOPs) after the join.  Both paths run exactly what
    they ran before, so cycles and balance stay; only the code shrinks."""
    out, k, where = [], 0, label_positions(items)
    while k < len(items):
        arm = _arm_at(items, k, where)
        if arm is None:
            out.append(items[k])
            k += 1
            continue
        entry, sub, add, end = arm
        head = _shared_head(sub.core, add.core)
        tail = _shared_tail(sub.core[head:], add.core[head:])
        out += sub.core[:head] + items[k:entry]
        for copy, closing in ((sub, items[sub.stop:add.start]), (add, [])):
            out += copy.core[head:len(copy.core) - tail] + copy.balance + closing
        out += [items[end]] + sub.core[len(sub.core) - tail:]
        k = end + 1
    return out


@dataclass(frozen=True)
class _Copy:
    """One path of an arm: items[start:stop], its instructions and comments (core) then the
    NOPs that balance it."""

    start: int
    stop: int
    core: list
    balance: list


def _arm_at(items: list, k: int, where: dict[str, int]) -> tuple[int, _Copy, _Copy, int] | None:
    """If items[k] enters a signed arm as emit_signed_arm lays it out: where its subtracting
    copy starts (entry), both copies, and where the join label stands (where: the labels'
    positions in items)."""
    it = items[k]
    if not (isinstance(it, Instr) and it.mnemonic in ("brts", "brtc")):
        return None
    if it.mnemonic == "brts":
        entry, add_label = k + 1, it.operands[0]
    else:  # BRTC to the subtracting copy, RJMP to the adding one
        jump = items[k + 1] if k + 1 < len(items) else None
        if not (isinstance(jump, Instr) and jump.mnemonic == "rjmp"):
            return None
        entry, add_label = where.get(it.operands[0], -2) + 1, jump.operands[0]
    add_start = where.get(add_label, -1) + 1
    jump = items[add_start - 2]  # the subtracting copy's RJMP to the join
    if not (add_label.startswith("addM") and entry > k and isinstance(jump, Instr)
            and jump.mnemonic == "rjmp" and jump.operands[0].startswith("join")):
        return None
    end = where[jump.operands[0]]
    return entry, _split(items, entry, add_start - 2), _split(items, add_start, end), end


def _split(items: list, start: int, stop: int) -> _Copy:
    core = items[start:stop]
    n = len(core)
    while n and isinstance(core[n - 1], Instr) and core[n - 1].mnemonic == "nop":
        n -= 1
    return _Copy(start, stop, core[:n], core[n:])


def _shared_head(sub: list, add: list) -> int:
    """How many leading items the copies share that the branch on T may follow."""
    count = 0
    for x, y in zip(sub, add):
        if x != y or (isinstance(x, Instr) and ("T" in OPS[x.mnemonic].writes_flags
                                               or x.mnemonic == "out")):
            break
        count += 1
    return count


def _shared_tail(sub: list, add: list) -> int:
    count = 0
    for x, y in zip(reversed(sub), reversed(add)):
        if x != y:
            break
        count += 1
    return count
