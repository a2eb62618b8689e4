"""The values of allocated code: def-use webs over its control flow, their lifetimes and which
of them may share a register.

A web is every definition of a register that reaches a common use, joined with those uses: the
unit a register can be renamed by without changing what the code computes.  An instruction that
reads and writes one register (ADD's first operand, a post-incremented pointer) keeps that
register, so its definition joins the web it reads."""

from __future__ import annotations

from collections.abc import Sequence

from ..program.items import Label
from ..target.avr.isa import Instr

ENTRY = -1  # the position of the definitions a register holds on entry
JUMPS = ("rjmp", "jmp")
SKIPS = ("sbrc", "sbrs")


def label_positions(items: Sequence) -> dict[str, int]:
    """Where each label stands in items."""
    return {it.name: k for k, it in enumerate(items) if isinstance(it, Label)}


def successors(items: Sequence) -> list[list[int]]:
    """Each item's successors (branches to their labels, skips over the next instruction)."""
    where = label_positions(items)
    succ = []
    for k, it in enumerate(items):
        nxt = [k + 1] if k + 1 < len(items) else []
        if not isinstance(it, Instr):
            succ.append(nxt)
        elif it.mnemonic in JUMPS:
            succ.append([where[it.operands[0]]])
        elif it.mnemonic == "ret":
            succ.append([])
        elif it.mnemonic in SKIPS:
            after = next(j for j in range(k + 1, len(items)) if isinstance(items[j], Instr))
            succ.append(nxt + [after + 1] if after + 1 < len(items) else nxt)
        elif it.is_branch:
            succ.append(nxt + [where[it.operands[0]]])
        else:
            succ.append(nxt)
    return succ


class Webs:
    """Def-use webs of `items` (see the module doc).  A definition is (position, register);
    webs are named by one of their definitions.  live_at_end: registers read after the code."""

    def __init__(self, items: Sequence, live_at_end: frozenset[int]) -> None:
        self.items, self.live_at_end = items, live_at_end
        self.parent: dict[tuple, tuple] = {}  # union-find over definitions
        self.reach: list = []  # per item: register -> definitions reaching it (None: unreached)
        self.live_out: list[frozenset] = []  # per item: registers live after it
        self.succ = successors(self.items)
        self.preds: list[list[int]] = [[] for _ in self.items]
        for k, ss in enumerate(self.succ):
            for s in ss:
                self.preds[s].append(k)
        self.reaching_definitions()
        self.liveness()
        self.join()

    def find(self, d: tuple) -> tuple:
        self.parent.setdefault(d, d)
        while self.parent[d] != d:
            self.parent[d] = self.parent[self.parent[d]]
            d = self.parent[d]
        return d

    def union(self, defs) -> tuple | None:
        defs = [self.find(d) for d in defs]
        for d in defs[1:]:
            self.parent[d] = defs[0]
        return defs[0] if defs else None

    def reaching_definitions(self) -> None:
        """Forward data flow to a fixed point: which definitions of each register reach each
        item."""
        n = len(self.items)
        entry = {r: frozenset({(ENTRY, r)}) for r in range(32)}
        self.reach = [None] * n
        out: list = [None] * n
        work = list(range(n))
        while work:
            k = work.pop(0)
            ins = [out[p] for p in self.preds[k] if out[p] is not None]
            state = entry if k == 0 else merge(ins)
            if state is None:
                continue
            self.reach[k] = state
            new = self.after(k, state)
            if new != out[k]:
                out[k] = new
                work.extend(s for s in self.succ[k] if s not in work)
        self.reach_end = out[n - 1] if n else entry

    def after(self, k: int, state: dict) -> dict:
        it = self.items[k]
        if not isinstance(it, Instr) or not it.writes:
            return state
        new = dict(state)
        for r in it.writes:
            new[r] = frozenset({(k, r)})
        return new

    def liveness(self) -> None:
        n = len(self.items)
        live_in: list[frozenset] = [frozenset()] * n
        self.live_out = [frozenset()] * n
        changed = True
        while changed:
            changed = False
            for k in range(n - 1, -1, -1):
                outs = [live_in[s] for s in self.succ[k]]
                lo = frozenset().union(*outs) if self.succ[k] else frozenset()
                if k == n - 1 or not self.succ[k]:
                    lo |= self.live_at_end
                it = self.items[k]
                li = (lo - it.writes) | it.reads if isinstance(it, Instr) else lo
                if lo != self.live_out[k] or li != live_in[k]:
                    self.live_out[k], live_in[k], changed = lo, li, True

    def join(self) -> None:
        """Uses join the definitions reaching them; read-modify-write keeps its register."""
        for k, it in enumerate(self.items):
            if not isinstance(it, Instr) or self.reach[k] is None:
                continue
            for r in it.reads:
                self.union(self.reach[k][r])
            for r in it.writes:
                self.find((k, r))
                if r in it.reads:
                    self.union([(k, r), *self.reach[k][r]])
        for r in self.live_at_end:
            self.union(self.reach_end[r])

    def entry_webs(self) -> set[tuple]:
        """The webs that hold a value from before the code."""
        return {self.find((ENTRY, r)) for r in range(32) if (ENTRY, r) in self.parent}

    def read(self, k: int, r: int) -> tuple:
        """The web register r is read from at item k."""
        return self.find(next(iter(self.reach[k][r])))

    def written(self, k: int, r: int) -> tuple:
        return self.find((k, r))

    def live_after(self, k: int, r: int) -> tuple:
        """The web register r holds after item k (r live there)."""
        it = self.items[k]
        if isinstance(it, Instr) and r in it.writes:
            return self.written(k, r)
        return self.read(k, r)


def merge(states: list) -> dict | None:
    if not states:
        return None
    if len(states) == 1:
        return states[0]
    return {r: frozenset().union(*(s[r] for s in states)) for r in range(32)}
