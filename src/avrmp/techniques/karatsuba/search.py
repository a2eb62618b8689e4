"""The search over a base block's forms: every BaseForm the block's role allows, each allocated
with every eviction preference, the cheapest kept."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...program.program import Program
from ...regalloc.allocator import allocate
from ...regalloc.recolor import ColouringMismatch, find_colours, recolor
from ...regalloc.signed_arm import merge_shared_ends
from ...regalloc.vprogram import AllocationError, VProgram
from ...target.avr.isa import Mem
from ...tuning.choices import Choices, Decision, StaleChoices, Trial
from .base import BaseForm, BaseRole, Src, emit_base
from .combine import TOP_RETURN
from .regs import ROWS_UPTO

BASE_POOL = list(range(2, 26))
CLEAN_BIAS = (0, 30, 60)  # eviction preferences tried per block (Allocator's clean_bias)
REFINE = 8  # allocations of a block's cheapest forms retried with defragmentation
# The shortest halves for which a signed M (BaseForm.signed_m) is tried: with 4- and 5-byte
# halves its correction and the registers it holds cost what it saves (measured at 64 to 160
# bits and at 256); from 6 bytes on it wins in some blocks (112, 168, 192 and 224 bits).
SIGNED_M_FROM = 6


@dataclass(frozen=True)
class Space:
    """Which options a block's role opens to the search: addend (fold_e1), parent (the
    combination's options and r01_early), own_z (y_early, push_z, swap_m), pointers_wait
    (push_xy), node_first (node_l0_kept)."""

    addend: bool = True
    parent: bool = False
    own_z: bool = False
    pointers_wait: bool = False
    node_first: bool = False

    def options(self, m: int, scratch: int, branchfree: bool) -> dict[str, tuple]:
        """Each searched BaseForm field and its values, in the order they are tried.  (A zero
        register pair and an inner Karatsuba level for products under 7 bytes never won at any
        size, so they are not tried.)"""
        # Small bases are cheap to generate: there product scanning is tried for the 4- and
        # 5-byte products too (the row-wise block's MOVW temporaries may not find free pairs).
        rows = [ROWS_UPTO] + ([3] if m <= 2 * ROWS_UPTO else [])
        if m in (11, 12):  # 6-byte products: row-wise wins where pairs are free (the L product)
            rows += [(6, ROWS_UPTO, ROWS_UPTO), 6, (6, ROWS_UPTO, 6)]
        both, no = (False, True), (False,)
        parent = self.parent
        return {
            "scratch": tuple(sorted({scratch, 0})),
            "karatsuba_from": (0,) + (((m + 1) // 2,) if (m + 1) // 2 >= 7 else ()),
            "rows_upto": tuple(rows),
            "fold_e1": both if self.addend else no,
            "t_flag": both if branchfree else no,
            **({"signed_m": both} if branchfree and (m + 1) // 2 >= SIGNED_M_FROM else {}),
            "combine_w": (2, 4, 8) if parent else (4,),
            "combine_keep_c": (True, False) if parent else (True,),
            "premask": both if parent and branchfree else no,
            "y_early": both if self.own_z else no,
            "push_z": both if self.own_z else no,
            "swap_m": both if self.own_z else no,
            "diff_early": both,
            **({"r01_early": both} if parent else {}),
        } | ({"push_xy": both} if self.pointers_wait else {}) \
          | ({"node_l0_kept": both} if self.node_first else {})


def forms(space: Space, m: int, scratch: int, branchfree: bool):
    """Every form the space allows (Y given up early gains nothing when it holds the frame's
    scratch pointer either way)."""
    options = space.options(m, scratch, branchfree)
    for values in itertools.product(*options.values()):
        opts = dict(zip(options, values))
        if not (opts["y_early"] and opts["scratch"]):
            yield opts


@dataclass(frozen=True)
class Allocation:
    """One allocation of a block: its cycles (the path without branches taken), its code and the
    options that made it (the block's recorded choice)."""

    cycles: int
    code: Program
    pick: dict


def allocate_pick(vp: VProgram, spill: list[Mem], labels: Program, pick: dict,
                  stats: dict | None = None, core: str = "avre") -> Allocation | None:
    """vp allocated with the eviction preference and defragmentation of `pick`, or None where
    it does not allocate."""
    trial = Program()
    try:
        allocate(vp, BASE_POOL, trial, spill_slots=spill, labels_from=labels,
                 defragment=pick["defragment"], stats=stats, clean_bias=pick["bias"],
                 jitter=pick.get("seed", 0))
    except AllocationError:
        return None
    return Allocation(trial.static_cycles(core, nominal=True), trial, pick)


RECOLOR_POOL = range(2, 32)  # a pointer a block pushes lends its registers to data
LIVE_AFTER_BLOCK = frozenset(range(32)) - set(BASE_POOL)  # what a block leaves in registers


def colours_of(code: Program, live_out: frozenset[int] = LIVE_AFTER_BLOCK,
               pool: Sequence[int] = RECOLOR_POOL) -> str:
    """The block's exact recolouring (regalloc/recolor.py), to record; live_out: the registers
    read after it; pool: the registers values may be renamed to."""
    return find_colours(code.items, pool, live_out)


def recolored(code: Program, colours: str, live_out: frozenset[int] = LIVE_AFTER_BLOCK,
              pool: Sequence[int] = RECOLOR_POOL) -> Program:
    """The block with its recorded colouring applied, then its signed arms' shared ends merged
    (after: the recorded colourings name the values of the code as allocated)."""
    out = Program()
    try:
        out.items = merge_shared_ends(recolor(code.items, pool, live_out, colours))
    except ColouringMismatch as e:
        raise StaleChoices(str(e)) from e
    return out


def recoloured_cycles(code: Program, live_out: frozenset[int], core: str,
                      pool: Sequence[int] = RECOLOR_POOL) -> tuple[int, str]:
    """The block's cycles once recoloured (on the path without branches taken), and the
    colouring."""
    colours = colours_of(code, live_out, pool)
    return recolored(code, colours, live_out, pool).static_cycles(core, nominal=True), colours


def emit_chosen(p: Program, choices: Choices, name: str, what: str,
                search: Callable[[], tuple[dict, Program, int, str | None]],
                allocate_pick: Callable[[dict], Program | None],
                live_out: frozenset[int] = LIVE_AFTER_BLOCK,
                pool: Sequence[int] = RECOLOR_POOL) -> dict:
    """A block chosen by a search and recorded as `name` (`what` it is, for errors), with its
    exact recolouring inside the choice; returns the pick.  Searching: search() gives the pick,
    its code, its cycles and its colouring if it has one yet.  Replaying: allocate_pick(pick)
    gives the recorded pick's code, None where it no longer allocates."""
    if choices.searching:
        pick, code, cycles, colours = search()
        colours = colours or colours_of(code, live_out, pool)
        choices.record(name, Trial(pick, None, cycles, [Decision("colours", colours)]))
    else:
        def replay(pick: dict, sub: Choices) -> tuple[dict, Program, str]:
            code = allocate_pick(pick)
            if code is None:
                raise StaleChoices(f"the recorded {what} no longer allocates")
            return pick, code, sub.decide_late("colours", lambda: colours_of(code, live_out,
                                                                               pool))

        pick, code, colours = choices.replay(name, replay)
    p.extend(recolored(code, colours, live_out, pool))
    return pick


def run_best(p: Program, spill: list[Mem], variant: str, scratch: int, m: int,
             emit: Callable[[VProgram, str, dict], None], space: Space, choices: Choices,
             name: str = "base", labels: Program | None = None,
             live_out: frozenset[int] = LIVE_AFTER_BLOCK) -> None:
    """Emit a block in its cheapest form; emit(vp, variant, opts) emits it with BaseForm(**opts).
    The choice (variant, form, eviction preference, defragmentation) is recorded as `name`,
    with the block's exact recolouring inside it; replaying, only the recorded one is emitted.
    live_out: the registers read after the block (the recolouring keeps them)."""
    labels = labels or p

    def search() -> tuple[dict, Program, int, str]:
        best = search_block(spill, variant, scratch, m, emit, space, labels, choices.core)
        return jittered(best, emit_pick, spill, labels, live_out, choices)

    def emit_pick(pick: dict) -> VProgram:
        vp = VProgram()
        form = {k: tuple(v) if isinstance(v, list) else v for k, v in pick.items()
                if k not in ("variant", "bias", "defragment", "seed")}
        emit(vp, pick["variant"], form)
        return vp

    def allocate(pick: dict) -> Program | None:
        vp = emit_pick(pick)
        found = allocate_pick(vp, spill, labels, pick, core=choices.core)
        return None if found is None else found.code

    emit_chosen(p, choices, name, f"{name} form", search, allocate, live_out)


JITTER_KEEP = 12  # jittered allocations recoloured per block: the cheapest before recolouring


def jittered(best: Allocation, emit_pick: Callable[[dict], VProgram], spill: list[Mem],
             labels: Program, live_out: frozenset[int], choices: Choices
             ) -> tuple[dict, Program, int, str]:
    """The block's best allocation, recoloured, or (choices.jitter) a cheaper one among that
    form's jittered allocations (seeds 1..jitter, Allocator): the JITTER_KEEP cheapest of those
    are recoloured too, and the cheapest after recolouring is kept.  Returns its pick (with
    its seed), code, cycles after recolouring and colouring."""
    tried = [best]
    if choices.jitter:
        vp = emit_pick(best.pick)
        tried += [found for pick in jitter_picks(best.pick, choices.jitter)
                  if (found := allocate_pick(vp, spill, labels, pick, core=choices.core))
                  is not None]
    kept = sorted(tried, key=lambda a: a.cycles)[:JITTER_KEEP]  # stable: the plain one first
    scored = [(*recoloured_cycles(a.code, live_out, choices.core), a) for a in kept]
    cycles, colours, found = min(scored, key=lambda s: s[0])  # the first among equals
    return found.pick, found.code, cycles, colours


def jitter_picks(pick: dict, jitter: int) -> list[dict]:
    """pick with each jitter seed 1..jitter (the allocator's `jitter`, recorded as "seed")."""
    return [pick | {"seed": seed} for seed in range(1, jitter + 1)]


def search_block(spill: list[Mem], variant: str, scratch: int, m: int, emit, space: Space,
                 labels: Program, core: str) -> Allocation:
    """Every form is allocated with each eviction preference (CLEAN_BIAS); the REFINE cheapest
    forms that had to split a MOVW are then tried with defragmentation too (it moves a few
    cycles, rarely the ranking, and trying it everywhere would take most of the generation
    time).  A branched block that cannot be allocated falls back to branch-free arithmetic
    (still constant time)."""
    best = None
    for v in (variant, "branchfree") if variant == "branched" else (variant,):
        split = []
        for opts in forms(space, m, scratch, v == "branchfree"):
            vp = VProgram()
            emit(vp, v, opts)
            cheapest = None
            for bias in CLEAN_BIAS:
                stats: dict = {}
                pick = {"variant": v, **opts, "bias": bias, "defragment": False}
                found = allocate_pick(vp, spill, labels, pick, stats, core)
                if found is not None and (cheapest is None or found.cycles < cheapest.cycles):
                    cheapest = found
                if stats.get("split_pairs"):
                    split.append((found.cycles if found else 10**9, len(split), vp, pick))
            if cheapest is not None and (best is None or cheapest.cycles < best.cycles):
                best = cheapest
        for _, _, vp, pick in sorted(split)[:REFINE]:
            found = allocate_pick(vp, spill, labels, pick | {"defragment": True}, core=core)
            if found is not None and (best is None or found.cycles < best.cycles):
                best = found
        if best is not None:
            return best
    raise AllocationError("no register allocation found for the base block")


def run_base(p: Program, spill: list[Mem], variant: str, m: int, a: Src, b: Src,
             choices: Choices, role: BaseRole | None = None, scratch: int = 0,
             labels: Program | None = None) -> None:
    """One base block in its cheapest form (run_best over the forms its role allows)."""
    role = role or BaseRole()
    space = Space(addend=role.addend is not None, parent=role.parent, own_z=role.owns_z)
    run_best(p, spill, variant, scratch, m,
             lambda vp, v, opts: emit_base(vp, m, a, b, v, role, BaseForm(**opts)), space,
             choices, labels=labels,
             live_out=LIVE_AFTER_BLOCK | (TOP_RETURN if role.defers_top else frozenset()))


def run_block(p: Program, vp: VProgram, spill: list[Mem]) -> None:
    """A block with nothing to search: allocated once."""
    allocate(vp, BASE_POOL, p, spill_slots=spill)
