"""The cost model: cycles of a program from the instruction table, without running it."""

from __future__ import annotations

from collections.abc import Sequence

from ..target.avr.isa import Instr
from .items import Label

MAX_CALL_DEPTH = 64  # deeper calls are taken for recursion: no static cost


def static_cycles(items: Sequence, core: str = "avre", nominal: bool = False,
                  pc_bytes: int = 2) -> int | None:
    """Cycles of code whose path does not depend on data: straight-line code, with unconditional
    jumps followed and each subroutine inside the program costed once per call, up to the RET
    that ends the routine (or the end of the code).  None if the code leaves the program, loops,
    or (unless nominal) has a conditional branch or skip.  nominal: such a branch or skip counts as
    not taken, one cycle: the cost of a NOP-balanced branch, the same on either path.  pc_bytes:
    the part's return-address size (a call and a return take a cycle more with 3)."""
    where = {item.name: k for k, item in enumerate(items) if isinstance(item, Label)}
    memo: dict[int, int | None] = {}

    def run(start: int, depth: int) -> int | None:
        if start not in memo:
            memo[start] = None if depth > MAX_CALL_DEPTH else walk(start, depth)
        return memo[start]

    def walk(k: int, depth: int) -> int | None:
        total, jumped = 0, set()
        while k < len(items):
            item = items[k]
            k += 1
            if not isinstance(item, Instr):
                continue
            cost = item.cycles(core, pc_bytes)
            if cost is None and not nominal:
                return None
            total += 1 if cost is None else cost
            if item.mnemonic == "ret":
                break
            if item.mnemonic not in ("rjmp", "jmp", "rcall", "call"):
                continue
            target = where.get(item.operands[0])
            if target is None:
                return None  # leaves the program: only simulation knows
            if item.mnemonic in ("rcall", "call"):
                sub = run(target, depth + 1)
                if sub is None:
                    return None
                total += sub
            elif target in jumped:
                return None  # a loop without a conditional branch never ends
            else:
                jumped.add(target)
                k = target
        return total

    return run(0, 0)
