"""Exact recolouring of allocated code: the allocator walks the code once and cannot see that a
register it picks now will split an aligned pair a MOVW needs later, so it leaves MOV pairs
(no free aligned pair) and MOVs that free a pair.  With every value's lifetime known
(regalloc/webs.py), a constraint model (OR-Tools CP-SAT) renames the registers so that as
many of those MOV pairs as possible become MOVWs and as many MOVs as possible vanish (source and
destination in one register).  Only register numbers change, and those MOVs: flags, memory
traffic and the order of everything else stay as the allocator left them.

Inside a signed arm (between its branch and its join) registers are renamed but no MOV is
removed, so both paths keep their equal cycles.  The solve (find_colours) is single-threaded
with a deterministic work limit, so the same code always gets the same colouring; the builder
records it as a string (a letter per renamable value), and recolor applies a recorded one
after checking it against the code's constraints, without solving."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from ortools.sat.python import cp_model

from ..target.avr.isa import PAIR_KINDS, POINTER_REGS, REG_KINDS, SELF_DEFINING, Instr, Mem, op
from .webs import Webs, label_positions

WORK_LIMIT = 2.0  # CP-SAT deterministic time per solve (about seconds of one core)
KIND_DOMAIN = {"h": range(16, 32), "m": range(16, 24), "a": (24, 26, 28, 30)}
ALPHABET = "0123456789abcdefghijklmnopqrstuv"  # a recorded colouring: one letter a register


class ColouringMismatch(ValueError):
    """A recorded colouring that does not fit the code (recorded for other code)."""


def find_colours(items: Sequence, pool: Sequence[int], live_at_end: frozenset[int]) -> str:
    """The best colouring of the code's renamable webs (see Problem) as a string to record, or
    "" if it gains nothing."""
    problem = Problem(list(items), pool, live_at_end)
    colour = solve(problem)
    return "" if colour is None else "".join(ALPHABET[colour[w]] for w in problem.renamable)


def recolor(items: Sequence, pool: Sequence[int], live_at_end: frozenset[int],
            colours: str) -> list:
    """`items` with the recorded colouring applied: registers renamed, MOVs onto themselves
    dropped and aligned MOV pairs made MOVWs (ColouringMismatch if it does not fit)."""
    items = list(items)
    if not colours:
        return items
    problem = Problem(items, pool, live_at_end)
    colour = problem.decode(colours)
    return tidy(rename(items, problem.webs, colour), in_arm(items))


def in_arm(items: Sequence) -> list[bool]:
    """Whether each item lies between a jump or branch and the farthest label reached so far."""
    where = label_positions(items)
    inside, until = [], -1
    for k, it in enumerate(items):
        target = it.operands[0] if isinstance(it, Instr) and it.operands else None
        if isinstance(target, str):
            until = max(until, where.get(target, k))
        inside.append(k <= until)
    return inside


def register_operands(it: Instr):
    """(operand index, register, kind, access) of each register operand (SBC r, r and the like
    only write)."""
    info = op(it.mnemonic)
    access = info.access
    if it.mnemonic in SELF_DEFINING and it.operands[0] == it.operands[1]:
        access = "ww"
    return [(j, v, kind, acc) for j, (kind, acc, v) in enumerate(zip(info.kinds, access,
                                                                      it.operands))
            if kind in REG_KINDS]


def web_of(webs: Webs, k: int, reg: int, access: str) -> tuple:
    return webs.written(k, reg) if access == "w" else webs.read(k, reg)


class Problem:
    """The colouring problem: a register per web (its domain: the pool, narrowed by the operand
    kinds that name it; one register for webs that must stay), different registers for webs
    alive at once (cliques), aligned pairs where an instruction names a pair (pairs)."""

    def __init__(self, items: list, pool: Sequence[int], live_at_end: frozenset[int]) -> None:
        self.items, self.pool = items, set(pool)
        self.webs = Webs(items, live_at_end)
        self.original: dict[tuple, int] = {}
        self.fixed: set[tuple] = set()
        self.domain: dict[tuple, set[int]] = {}
        self.collect()
        self.renamable = [w for w in self.original if w not in self.fixed]
        self.cliques = self.alive_at_once()
        self.pairs = self.named_pairs()

    def decode(self, colours: str) -> dict[tuple, int]:
        """A recorded colouring, checked against the constraints."""
        regs = [ALPHABET.find(c) for c in colours]
        if len(regs) != len(self.renamable):
            raise ColouringMismatch("the recorded colouring names another number of values")
        colour = dict(self.original) | dict(zip(self.renamable, regs))
        if any(colour[w] not in self.domain[w] for w in self.renamable) \
                or any(len({colour[w] for w in c}) != len(c) for c in self.cliques) \
                or any(colour[hi] != colour[lo] + 1 for lo, hi in self.pairs):
            raise ColouringMismatch("the recorded colouring breaks the code's constraints")
        return colour

    def note(self, w: tuple, reg: int, kind: str = "r") -> None:
        self.original.setdefault(w, reg)
        if reg not in self.pool:
            self.fixed.add(w)
        dom = self.domain.setdefault(w, set(self.pool))
        if kind in KIND_DOMAIN:
            dom &= set(KIND_DOMAIN[kind])
        if kind in PAIR_KINDS:
            dom &= set(range(0, 32, 2))

    def collect(self) -> None:
        webs = self.webs
        for k, it in enumerate(self.items):
            if not isinstance(it, Instr) or webs.reach[k] is None:
                continue
            for _, v, kind, acc in register_operands(it):
                regs = [v, v + 1] if kind in PAIR_KINDS else [v]
                for i, r in enumerate(regs):
                    self.note(web_of(webs, k, r, acc), r, kind if i == 0 else "r")
            for mem in (v for v in it.operands if isinstance(v, Mem)):
                for r in POINTER_REGS[mem.ptr]:
                    self.fixed.add(webs.read(k, r))
            for r in it.writes:  # implicit ones too (MUL's r1:r0, pointers)
                self.note(webs.written(k, r), r)
            for r in op(it.mnemonic).implicit_writes:  # MUL's r1:r0 stay, even in the pool
                self.fixed.add(webs.written(k, r))
            for r in it.reads:
                self.note(webs.read(k, r), r)
        for r in webs.live_at_end:
            for d in webs.reach_end[r]:
                self.note(webs.find(d), r)
                self.fixed.add(webs.find(d))
        self.fixed |= webs.entry_webs()
        for w in self.fixed:
            self.domain[w] = {self.original[w]}

    def alive_at_once(self) -> set[frozenset]:
        """Sets of webs alive at once: after each instruction, what it wrote and what lives on
        (a MOV's source that dies there may share its destination's register)."""
        webs, out = self.webs, set()
        for k, it in enumerate(self.items):
            if not isinstance(it, Instr) or webs.reach[k] is None:
                continue
            alive = {webs.live_after(k, q) for q in webs.live_out[k]}
            alive |= {webs.written(k, r) for r in it.writes}
            if len(alive) > 1:
                out.add(frozenset(alive))
        return out

    def named_pairs(self) -> list[tuple]:
        """(low web, high web) of every pair an instruction names (MOVW, ADIW)."""
        out = []
        for k, it in enumerate(self.items):
            if not isinstance(it, Instr) or self.webs.reach[k] is None:
                continue
            for _, v, kind, acc in register_operands(it):
                if kind in PAIR_KINDS:
                    out.append((web_of(self.webs, k, v, acc), web_of(self.webs, k, v + 1, acc)))
        return out


def solve(problem: Problem) -> dict | None:
    """The colouring that saves the most cycles (web -> register), None if none saves any: the
    original colouring is the hint, and the solve is single-threaded with a deterministic work
    limit, so it always finds the same one."""
    m = cp_model.CpModel()
    x = {w: m.NewIntVarFromDomain(cp_model.Domain.FromValues(sorted(d)), "")
         for w, d in problem.domain.items()}
    for w, r in problem.original.items():
        m.AddHint(x[w], r)
    for clique in problem.cliques:
        m.AddAllDifferent([x[w] for w in clique])
    for lo, hi in problem.pairs:
        m.Add(x[hi] == x[lo] + 1)
    gains = savings(problem, m, x)
    if not gains:
        return None
    m.Maximize(sum(gains))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = WORK_LIMIT
    solver.parameters.random_seed = 1
    # Left to its default, the solver installs its own SIGINT handler (and then SIG_DFL) behind
    # Python's back: Ctrl-C would kill avrmp without a word, or be swallowed
    solver.parameters.catch_sigint_signal = False
    try:
        status = solver.Solve(m)
    except IndexError:  # OR-Tools 9.15's presolve fails on a few hints: solve without them
        m.ClearHints()
        status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or solver.ObjectiveValue() < 1:
        return None
    return {w: solver.Value(v) for w, v in x.items()}


def savings(problem: Problem, m, x: dict) -> list:
    """A Boolean per MOV that can vanish and per MOV pair that can become a MOVW (outside arms:
    both paths of an arm keep their cycles)."""
    items, webs, gains = problem.items, problem.webs, []
    arm = in_arm(items)
    movs = [k for k, it in enumerate(items)
            if isinstance(it, Instr) and it.mnemonic == "mov" and not arm[k]]
    gone = {}
    for k in movs:
        d, s = items[k].operands
        a, b = webs.written(k, d), webs.read(k, s)
        if problem.domain[a] & problem.domain[b]:
            gone[k] = m.NewBoolVar("")
            m.Add(x[a] == x[b]).OnlyEnforceIf(gone[k])
            gains.append(gone[k])
    for k, j in pairwise(movs):
        if any(isinstance(it, Instr) for it in items[k + 1:j]):
            continue
        (d0, s0), (d1, s1) = items[k].operands, items[j].operands
        g = m.NewBoolVar("")
        for lo, hi in ((webs.written(k, d0), webs.written(j, d1)),
                       (webs.read(k, s0), webs.read(j, s1))):
            m.Add(x[hi] == x[lo] + 1).OnlyEnforceIf(g)
            half = m.NewIntVar(0, 15, "")
            m.Add(x[lo] == 2 * half).OnlyEnforceIf(g)
        for other in (gone.get(k), gone.get(j)):
            if other is not None:
                m.AddImplication(g, other.Not())
        gains.append(g)
    return gains


def rename(items: list, webs: Webs, colour: dict) -> list:
    out = []
    for k, it in enumerate(items):
        if not isinstance(it, Instr) or webs.reach[k] is None:
            out.append(it)
            continue
        ops = list(it.operands)
        for j, v, _, acc in register_operands(it):
            ops[j] = colour[web_of(webs, k, v, acc)]
        out.append(Instr.make(it.mnemonic, *ops, comment=it.comment))
    return out


def tidy(items: list, arm: list[bool]) -> list:
    """Outside arms: MOVs onto themselves dropped, aligned MOV pairs made one MOVW."""
    out: list = []
    inside_at: set[int] = set()  # positions in out of items inside an arm
    for it, inside in zip(items, arm):
        if inside:
            inside_at.add(len(out))
        if inside or not isinstance(it, Instr) or it.mnemonic != "mov":
            out.append(it)
            continue
        d, s = it.operands
        if d == s:
            continue
        k = next((j for j in range(len(out) - 1, -1, -1) if isinstance(out[j], Instr)), None)
        prev = out[k] if k is not None else None
        if prev is not None and prev.mnemonic == "mov" and k not in inside_at:
            d0, s0 = prev.operands
            if d0 % 2 == 0 and s0 % 2 == 0 and (d, s) == (d0 + 1, s0 + 1):
                out[k] = Instr.make("movw", d0, s0, comment=prev.comment)
                continue
        out.append(it)
    return out
