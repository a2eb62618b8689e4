"""Subtractive, refined Karatsuba multiplication (seed 000) up to 256 bits, for any operand size.

Structure.  With k = ceil(m/2), A = A_l + 2^8k A_h and B likewise,

    L = A_l B_l,  H = A_h B_h,  M = |A_l - A_h| |B_l - B_h|,  t = sign(A_l - A_h) xor sign(B_l - B_h)
    AB = L_0 + 2^8k U + 2^24k Hbar_hi,   Hbar = H + L_1,   U = (L_0 | Hbar_lo) + Hbar -/+ M

(refined Karatsuba: Hbar is accumulated on the fly while H is computed, so L_1 is added once).

* The **base** block (base.py) is one Karatsuba level entirely in (virtual) registers.
* A **memory level** (emit_mul_node) splits an even n into three children that are bases or
  memory levels.  The L child writes L; the H child adds L_1 into its product (Hbar, fused); the
  M child reads its operands as absolute differences computed in registers and finishes by
  combining U into the parent's result itself, so M never goes to memory.  When a child is itself
  a memory level its operands |A_l - A_h| are materialised in a stack frame (frame.py).

Variants: branch-free code adds (M xor t) + (t & 1); branched code runs M's chain in a signed arm
(an ADD and a SUB copy, NOP-balanced, so timing is still constant).  The sign of U's carry/borrow
and t are merged into one (d, f) register pair that ripples into the top bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...blocks.pointers import move_arguments
from ...blocks.stack import move_sp, move_sp_short, read_sp, write_sp
from ...errors import AvrmpError
from ...program.program import Program
from ...regalloc.vprogram import AllocationError, VProgram
from ...target.avr.isa import Mem
from ...tuning.choices import Choices, memo_search
from ..kernel import Kernel
from .base import BaseForm, BaseRole, NodeAddend, Src, emit_base, first_and_second
from .combine import OuterCombine, emit_mem_absdiffs, emit_mem_add_l1, emit_mem_combine
from .frame import (
    ARG_SLOT,
    SCRATCH,
    Entry,
    Frame,
    Loc,
    add_const,
    close_frame,
    lo_of,
    open_frame,
    pop_pointers,
    set_pointers,
    z_slots,
)
from .search import Space, run_base, run_best, run_block

MAX_BASE = 16  # largest base size whose LDD displacements and registers stay manageable
MIN_DEFAULT_BASE = 5  # smallest base the default level choice considers
SMALL_FRAME_SCRATCH = (0, 2, 4, 8, 16)  # spill room tried for two levels without a full frame
POINTERS_PUSHED = 4  # the small frame's operand pointers, pushed below its spill room
PRESET = (("X", "b"), ("Z", "r"))  # pointers a routine with its own frame gets from the wrapper


@dataclass(frozen=True)
class Prelude:
    """Code opening a two-level node's first block that forms its first base's operands there:
    the block starts with X on b and Y on a, and emit(vp) returns the first base's Srcs, having
    stored the node's M operands in place of A's and B's low halves, and their t in the frame,
    m_sign bytes above SP+1 (read there when the node's M base combines).  The node's operands
    then lie within reach of Z (its result pointer), through which its later bases read them,
    so X's and Y's registers hold data from here on."""

    a: Loc
    b: Loc
    emit: Callable[[VProgram], tuple[Src, Src]]
    m_sign: int


def emit_mul_node(
    p: Program, n: int, levels: int, a: Loc, b: Loc, out: Loc, frame: Frame, variant: str,
    choices: Choices, addend: Loc | None = None, entry: Entry | None = None,
    z_at: Loc | None = None,
    outer: OuterCombine | None = None, prelude: Prelude | None = None, defer_top: bool = False,
    last: bool = False,
) -> Loc | None:
    """out[0..2n) = a[0..n) * b[0..n) with `levels` Karatsuba levels (1 = a base in registers),
    plus the n bytes at `addend` (two levels only: see emit_node_addend), which lie below out
    within 63 - 2n bytes and are free once added (Z stays below the addend when the node's
    bytes are within its reach).  entry: this node starts the routine (see Entry); z_at: where Z points before the node;
    outer (two levels): the node's result feeds the parent's combination (emit_fused_combine)
    instead of going to out; prelude (two levels): the node's first block starts with it (see
    Prelude); defer_top (three levels, the routine's top node): its top bytes are left to the
    caller of a large routine's leaf (combine.Combination); last (the top node of a routine
    with its own frame): no code after this node's M child reads the saved entry pointers.
    Returns where Z points after it."""
    node = None
    if addend is not None:
        if levels != 2 or addend.base != out.base or not 0 < out.off - addend.off <= 63 - 2 * n:
            raise AssertionError("a node addend needs two levels and a result just above it")
        # Z stays where it is if the node's bytes are within reach of it (no ADIW to the addend)
        stay = z_at is not None and z_at.base == addend.base and z_at.off <= addend.off \
            and out.off + 2 * n - z_at.off <= 64
        z_home = z_at if stay else addend
        node = NodeAddend(e_off=addend.off - z_home.off, r_off=out.off - z_home.off)
    if levels == 1:
        set_pointers(p, entry, z_at=z_at, frame=frame, X=b, Y=a, Z=out)
        run_base(p, z_slots((n + 1) // 2, 2 * n), variant, n, Src(), Src(), choices,
                 BaseRole(scratch_off=frame.scratch_off), scratch=SCRATCH)
        return out
    p.comment(f"=== {8 * n}-bit Karatsuba level ({levels} levels): L = A_l * B_l ===")
    if levels == 2:
        z_at = emit_l_and_h(p, n // 2, a, b, out, variant, choices, frame, node=node,
                            entry=entry, z_at=z_at, prelude=prelude)
    else:
        z_at = _emit_l_and_h_nodes(p, n, levels, a, b, out, frame, variant, choices, entry, z_at)
    p.comment(f"=== {8 * n}-bit level: M = |A_l - A_h| * |B_l - B_h|, combine ===")
    if levels == 2:
        assert not defer_top, "a deferred top needs three levels"
        return _emit_m_base(p, n // 2, a, b, out, frame, variant, choices, node, outer, z_at,
                            prelude, last)
    if levels == 3 and out.base == "r":
        _emit_m_fused(p, n // 2, a, b, out, frame, variant, choices, z_at, defer_top)
        return None
    assert not defer_top, "a deferred top needs three levels"
    return _emit_m_node(p, n, levels, a, b, out, frame, variant, choices, z_at)


def _emit_l_and_h_nodes(p: Program, n: int, levels: int, a: Loc, b: Loc, out: Loc,
                        frame: Frame, variant: str, choices: Choices, entry: Entry | None,
                        z_at: Loc | None) -> Loc | None:
    """L and Hbar as memory levels: the H child takes L_1 as its addend (three levels), or adds
    it by a memory pass."""
    k = n // 2
    z_at = emit_mul_node(p, k, levels - 1, a, b, out, frame, variant, choices, entry=entry,
                         z_at=z_at)
    p.comment(f"=== {8 * n}-bit level: Hbar = A_h * B_h + L_1 ===")
    if levels == 3:  # the H child takes L_1 as its addend
        return emit_mul_node(p, k, 2, a + k, b + k, out + 2 * k, frame, variant, choices,
                             addend=out + k, z_at=z_at)
    z_at = emit_mul_node(p, k, levels - 1, a + k, b + k, out + 2 * k, frame, variant, choices,
                         z_at=z_at)
    set_pointers(p, z_at=z_at, frame=frame, Z=out + k)
    vp = VProgram()
    emit_mem_add_l1(vp, k)
    run_block(p, vp, [])
    return out + k


def _emit_m_base(p: Program, k: int, a: Loc, b: Loc, out: Loc, frame: Frame, variant: str,
                 choices: Choices, node: NodeAddend | None, outer: OuterCombine | None,
                 z_at: Loc | None, prelude: Prelude | None, last: bool = False) -> Loc:
    """Two levels: the M child is a base that finishes the combination; its operands are
    differences it takes itself, or that the prelude stored.  last: the routine's own top node
    (emit_mul_node), whose M child may pop the saved pointers."""
    # Spill room: U's low half until the combination writes it; with an addend that is where
    # X_1 waits, and the consumed addend (after its carry byte) is free instead.
    spill = z_slots(node.e_off + 1, node.r_off) if node else z_slots(k, 2 * k)
    z_home = out + -node.r_off if node else out
    if prelude:  # the operands lie within reach of Z: X and Y are free for data
        set_pointers(p, z_at=z_at, frame=frame, Z=z_home)
        srcs = (Src(sign=prelude.m_sign, ptr="Z", off=a.off - z_home.off),
                Src(ptr="Z", off=b.off - z_home.off))
    else:
        y_at, disp = y_reach(a, 2 * k)
        if last and outer is None and z_at == z_home:
            pop_pointers(p, frame, X=b, Y=y_at)
        else:
            set_pointers(p, z_at=z_at, frame=frame, X=b, Y=y_at, Z=z_home)
        srcs = (Src(absdiff=True, off=disp), Src(absdiff=True))
    run_base(p, spill, variant, k, *srcs, choices,
             BaseRole(parent=True, scratch_off=frame.scratch_off, node=node, outer=outer),
             scratch=SCRATCH)
    return z_home


def _emit_m_fused(p: Program, k: int, a: Loc, b: Loc, out: Loc, frame: Frame, variant: str,
                  choices: Choices, z_at: Loc | None, defer_top: bool = False) -> None:
    """Three levels: the M child (a two-level node) feeds this combination directly, and its
    first block starts with the differences: its first base takes their low halves from the
    registers, and its M base finds its own operands and t already taken (emit_mem_absdiffs,
    inner).  Frame: the child's t and this level's t (both within LDD's reach of SP, where
    the child's combination reads them), M's L and Hbar, |A_l - A_h|, |B_l - B_h| (their low
    halves replaced by the child's M operands), all within reach of Z on L."""
    assert 4 * k <= 64, "the differences must lie within STD's reach of Z"
    m_sign = frame.alloc(1)
    t_slot = frame.alloc(1)
    prod = frame.alloc(2 * k)
    diffs = frame.alloc(2 * k)

    def differences(vp: VProgram) -> tuple[Src, Src]:
        da, db, t, t_m = emit_mem_absdiffs(vp, k, at=2 * k, inner=True)
        vp.reclaim(28, 29)
        vp.movw(28, 30)
        vp.st(Mem("Y", "-"), t, comment="t, just below M's L")
        vp.st(Mem("Y", "-"), t_m, comment="the M child's t, below it")
        vp.release(28, 29)  # no base of the child reads through Y (see Prelude)
        return Src(regs=tuple(da[: k // 2])), Src(regs=tuple(db[: k // 2]))

    emit_mul_node(p, k, 2, diffs, diffs + k, prod, frame, variant, choices, z_at=z_at,
                  outer=OuterCombine(k=k, r_off=out.off, t_slot=t_slot.off,
                                     r_slot=frame.arg_slot("r"), defer=defer_top),
                  prelude=Prelude(a, b, differences, m_sign.off))
    frame.free(m_sign)


def _emit_m_node(p: Program, n: int, levels: int, a: Loc, b: Loc, out: Loc, frame: Frame,
                 variant: str, choices: Choices, z_at: Loc | None) -> Loc:
    """The M child is a memory level too: |A_l - A_h|, |B_l - B_h| and t go to the frame, M
    follows them, and a memory pass combines."""
    k = n // 2
    diffs = frame.alloc(1 + 2 * k)
    set_pointers(p, z_at=z_at, frame=frame, X=b, Y=a, Z=diffs)
    vp = VProgram()
    _, _, t, _ = emit_mem_absdiffs(vp, k)
    vp.std(Mem("Z", disp=0), t, comment="t")
    run_block(p, vp, [])
    prod = frame.alloc(2 * k)
    z_at = emit_mul_node(p, k, levels - 1, diffs + 1, diffs + 1 + k, prod, frame, variant,
                         choices, z_at=diffs)
    set_pointers(p, z_at=z_at, frame=frame, Y=diffs, Z=out)
    vp = VProgram()
    emit_mem_combine(vp, k, m_off=prod.off - diffs.off, variant=variant)
    run_block(p, vp, [])
    frame.free(diffs)
    return out


def emit_l_and_h(p: Program, k: int, a: Loc, b: Loc, out: Loc, variant: str, choices: Choices,
                 frame: Frame | None, scratch: int = 0, node: NodeAddend | None = None,
                 entry: Entry | None = None, z_at: Loc | None = None,
                 prelude: Prelude | None = None) -> Loc | None:
    """L = A_l B_l and Hbar = A_h B_h + L_1 by two bases: either as separate blocks (L_1 goes
    through memory), or as one block that hands L_1 over in registers; the cheaper wins (the
    separate blocks when they tie).  Without a full frame (frame None) X, Y and Z already point
    at b, a and out, only the joint block is possible (the pointers cannot be reloaded), and
    `scratch` bytes at SP+1 are lent.  With a node addend (node) Z points node.e_off bytes below
    it, out lies node.r_off bytes above Z, and the joint block folds it in.  prelude: the joint
    block starts with it and takes the first base's operands from it (see Prelude).  Returns
    where Z points afterwards (None: unknown)."""
    r = node.r_off if node else 0
    if prelude:  # the Hbar base's operands through Z (see Prelude)
        y_at, srcs_l = prelude.a, None
        srcs_h = (Src(ptr="Z", off=a.off + k - out.off + r),
                  Src(ptr="Z", off=b.off + k - out.off + r))
    else:
        y_at, disp = (a, 0) if frame is None else y_reach(a, 2 * k)
        srcs_l, srcs_h = (Src(off=disp), Src()), (Src(off=disp + k), Src())

    def joint(_, c: Choices) -> tuple[Program, Loc | None]:
        q = Program()
        if frame is not None:
            x_at = prelude.b if prelude else b
            set_pointers(q, entry, z_at=z_at, frame=frame, X=x_at, Y=y_at, Z=out + -r)
        _run_joint(q, k, variant, c, frame, scratch, node, prelude, (srcs_l, srcs_h), labels=p)
        return q, out + -r if frame is not None else None

    def separate(_, c: Choices) -> tuple[Program, Loc]:
        q = Program()
        set_pointers(q, entry, z_at=z_at, frame=frame, X=b, Y=a, Z=out)
        run_base(q, z_slots((k + 1) // 2, 2 * k), variant, k, Src(), Src(), c,
                 BaseRole(scratch_off=frame.scratch_off), scratch=SCRATCH, labels=p)
        q.comment(f"=== {16 * k}-bit level: Hbar = A_h * B_h + L_1 ===")
        set_pointers(q, z_at=out, frame=frame, X=b + k, Y=a + k, Z=out + k)
        run_base(q, z_slots(k + (k + 1) // 2, 3 * k), variant, k, Src(), Src(), c,
                 BaseRole(out_off=k, addend=0, scratch_off=frame.scratch_off), scratch=SCRATCH,
                 labels=p)
        return q, out + k

    if frame is None or node or prelude:
        code, z = joint(None, choices)
    else:  # equal cycles: the separate blocks (Z then ends at out + k)
        code, z = choices.choose("l_and_h", ("joint", "separate"),
                                 lambda way, c: (separate if way == "separate" else joint)(way, c),
                                 cost=lambda built: (choices.cycles(built[0]), built[1] == out))
    p.extend(code)
    return z


def _run_joint(p: Program, k: int, variant: str, choices: Choices, frame: Frame | None,
               scratch: int, node: NodeAddend | None, prelude: Prelude | None,
               srcs: tuple[tuple[Src, Src] | None, tuple[Src, Src]], labels: Program) -> None:
    """L's and Hbar's bases as one block, L_1 handed over in registers; without a full frame
    (frame None), `scratch` bytes at SP+1 are lent.  srcs: each base's operands (the first's
    from the prelude if there is one)."""
    r = node.r_off if node else 0
    first = BaseRole(out_off=r, keep_high=True, free_pointers=False, node=node)

    def both(vp: VProgram, v: str, opts: dict) -> None:
        form_l, form_h = first_and_second(BaseForm(**opts))
        l1 = emit_base(vp, k, *(prelude.emit(vp) if prelude else srcs[0]), v, first, form_l)
        vp.comment(f"=== {16 * k}-bit level: Hbar = A_h * B_h + L_1, L_1 still in registers ===")
        if not prelude:
            vp.comment("Y still on A (A_h by displacement); X already points at B_h")
        second = BaseRole(out_off=r + 2 * k, addend=l1,
                          scratch_off=frame.scratch_off if frame is not None else POINTERS_PUSHED)
        emit_base(vp, k, *srcs[1], v, second, form_h)

    lent = SCRATCH if frame is not None else scratch
    run_best(p, z_slots(r + (k + 1) // 2, r + 4 * k), variant, lent, k, both,
             Space(pointers_wait=prelude is None, node_first=node is not None), choices, "joint",
             labels)


def y_reach(a: Loc, nbytes: int) -> tuple[Loc, int]:
    """Where to point Y for reading nbytes of operand A at `a` by LDD, and the displacement
    that then reaches A: an entry pointer's offset (the H child's A_h) is left to the LDDs
    while they reach, which spares the ADIW that would move Y."""
    if a.base in ARG_SLOT and a.off and a.off + nbytes <= 64:
        return Loc(a.base), a.off
    return a, 0


# --- the kernel ---------------------------------------------------------------------------------


def fixed_mul_levels(n: int) -> list[int]:
    """--levels values for n-byte operands: each memory level halves an even size down to a
    base of 2..MAX_BASE bytes (3 or more below a memory level)."""
    opts = []
    for levels in range(1, 6):
        m = n >> (levels - 1)
        if n % (1 << (levels - 1)) or m < 2:
            break
        if m <= MAX_BASE and (levels == 1 or m >= 3):
            opts.append(levels)
    return opts


def karatsuba_mul(n: int, variant: str, levels: int | None = None,
                  choices: Choices | None = None, origin: int | None = None,
                  defer_top: bool = False) -> Kernel:
    """The n-byte multiplication with `levels` levels, or (default) the fastest number: every
    candidate built and costed (a NOP-balanced branch costs the same either way, so the
    straight-path count is exact for both variants).  Bases under MIN_DEFAULT_BASE bytes are only
    built on request: their levels' overhead outweighs what they save, and building them takes
    most of the generation time.  origin: a subroutine of a large routine, whose full frame (if
    the layout has one) the caller reserves (see _build_framed); defer_top: with three levels
    the routine leaves its top bytes to that caller (Kernel.top_deferred): they are in memory
    there, and the ripple it spares outweighs the caller's fold.  With two, the top bytes are
    still in registers when the M base finishes, and the fold would cost more than it spares
    (768 / 1536 bits: 30 / 249 cycles more)."""
    choices = choices or Choices()
    options = fixed_mul_levels(n)
    if levels is not None and levels not in options:
        raise AvrmpError(
            f"--levels {levels}: {8 * n}-bit Karatsuba supports levels "
            f"{', '.join(map(str, options)) or 'none'} (each memory level halves an even size; "
            f"the base in registers takes 2..{MAX_BASE} bytes)"
        )
    candidates = [levels] if levels is not None else \
        [lv for lv in options if n >> (lv - 1) >= MIN_DEFAULT_BASE] or options
    return choices.choose("levels", candidates,
                          lambda lv, c: build_levels(n, lv, variant, origin, defer_top,
                                                     choices=c),
                          cost=lambda kern: choices.cycles(kern.body))


@memo_search
def build_levels(n: int, levels: int, variant: str, origin: int | None, defer_top: bool,
                 choices: Choices) -> Kernel:
    """The cheaper of the possible layouts: a 1-level routine may run without a stack frame
    (spilling only into the result buffer) or with one (more spill room); a 2-level one with a
    small frame (the least spill room that allocates).  defer_top: see karatsuba_mul."""
    defer_top = defer_top and levels == 3
    layouts = {1: ("frameless", "framed"), 2: ("small frame", "framed")}.get(levels, ("framed",))

    def build(layout: str, c: Choices) -> Kernel:
        if layout == "frameless":
            p = Program()
            run_base(p, z_slots((n + 1) // 2, 2 * n), variant, n, Src(), Src(), c)
            return Kernel(p, {"a": 28, "b": 26, "r": 30},
                          [f"1 level of Karatsuba, base {n} bytes, no stack frame"])
        if layout == "small frame":
            return _least_spill_room(n, variant, c)
        return _build_framed(n, levels, variant, c, origin, defer_top)

    return choices.choose("layout", layouts, build, cost=lambda kern: choices.cycles(kern.body))


def _least_spill_room(n: int, variant: str, choices: Choices) -> Kernel:
    """The small frame with the least spill room that allocates (SMALL_FRAME_SCRATCH, by
    bisection: a size that allocates means every larger one does too)."""
    def build(scratch: int, c: Choices) -> Kernel:
        return _build_small_frame(n, variant, scratch, c)

    if not choices.searching:
        return choices.replay("spill_room", build, SMALL_FRAME_SCRATCH)
    sizes = SMALL_FRAME_SCRATCH
    lo, hi, found = 0, len(sizes) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        trial = choices.trial(sizes[mid], build, cost=lambda kern: 0)
        if trial is None:
            lo = mid + 1
        else:
            found, hi = trial, mid - 1
    if found is None:
        raise AllocationError("no small frame lends enough spill room")
    choices.record("spill_room", found)
    return found.result


def _build_small_frame(n: int, variant: str, scratch: int, choices: Choices) -> Kernel:
    """Two levels with a small frame: `scratch` bytes of spill room, then the operand pointers
    pushed below it for the M child (instead of a full frame that saves all three pointers and
    reloads them through Z), which pops them: 8 cycles where reading SP and four LDDs take 11.
    Z keeps pointing at the result throughout."""
    k = n // 2
    p = Program()
    # The M child first: it needs the most spill room, so a failing size fails cheaply.
    m_child = Program()
    run_base(m_child, z_slots(k, 2 * k), variant, k, Src(absdiff=True), Src(absdiff=True),
             choices, BaseRole(parent=True, scratch_off=0), scratch=scratch, labels=p)
    p.phase(f"{scratch} bytes of spill room, then the operand pointers saved for the M child")
    move_sp_short(p, 24, -scratch, sbiw=False)
    for r in (26, 27, 28, 29):
        p.push(r)
    p.comment(f"=== {8 * n}-bit Karatsuba level (2 levels): L = A_l * B_l ===")
    emit_l_and_h(p, k, Loc("a"), Loc("b"), Loc("r"), variant, choices, None, scratch=scratch)
    p.comment(f"=== {8 * n}-bit level: M = |A_l - A_h| * |B_l - B_h|, combine ===")
    for r in (29, 28, 27, 26):
        p.pop(r)
    p.extend(m_child)
    if scratch:
        p.phase("release the spill room")
    move_sp_short(p, 28, scratch)
    frame = f"{scratch + 4} bytes of stack" if scratch else "4 bytes pushed"
    return Kernel(p, {"a": 28, "b": 26, "r": 30},
                  [f"2 levels of Karatsuba, base {k} bytes, small frame ({frame})"])


def _build_framed(n: int, levels: int, variant: str, choices: Choices,
                  origin: int | None = None, defer_top: bool = False) -> Kernel:
    """The routine with a full frame: its own, or (origin given, a subroutine of a large
    routine) one the caller reserved `origin` bytes above SP+1, so no SP is written here
    (Kernel.caller_frame says how many bytes)."""
    p = Program()
    frame = Frame(origin or 0)
    body = Program()
    # Its own frame's set-up uses Y only: X and Z are set by the wrapper, outside the core.
    preset = () if origin is not None else PRESET
    emit_mul_node(body, n, levels, Loc("a"), Loc("b"), Loc("r"), frame, variant, choices,
                  entry=Entry(preset), defer_top=defer_top, last=origin is None)
    size = frame.size - frame.origin  # (pop_pointers may have released the bottom 4 bytes)
    # only the entry pointers some code reads back are saved (with Z kept on r, r is not)
    saves = [(name, lo) for name, lo in (("r", 24), ("a", 22), ("b", 20)) if name in frame.read]
    open_frame(p, size, origin, saves, sbiw=False)
    p.extend(body)
    note = f"{levels} levels of Karatsuba, base {n >> (levels - 1)} bytes, frame {size} bytes"
    if origin is not None:
        return Kernel(p, {}, [note + " (reserved by the caller)"], caller_frame=size,
                      top_deferred=n // 2 if defer_top else 0, r_pair=28)
    close_frame(p, size - frame.popped)
    return Kernel(p, {arg: lo_of(ptr) for ptr, arg in preset}, [note])


def padded_mul(n: int, n_pad: int, inner: Kernel) -> Kernel:
    """n-byte operands through a routine for n_pad > n bytes: the operands are copied into the
    stack frame with zero bytes on top, the inner routine multiplies the copies into the frame,
    and the low 2n bytes of its result are copied out.  For sizes no Karatsuba split fits."""
    a_off, b_off, r_off = 2, 2 + n_pad, 2 + 2 * n_pad  # after the saved result pointer
    size = r_off + 2 * n_pad
    p = Program()
    p.phase(f"frame: {n}-byte operands padded to {n_pad} bytes, and the padded product")
    move_sp(p, 28, -size, sbiw=False)
    p.std(Mem("Y", disp=1), 24, comment="save pointer r")
    p.std(Mem("Y", disp=2), 25)
    p.movw(26, 28)
    add_const(p, 26, 1 + a_off)
    for src, name in ((22, "a"), (20, "b")):
        p.phase(f"copy {name} and zero its top {n_pad - n} byte(s)")
        p.movw(30, src)
        for _ in range(n):
            p.ld(0, Mem("Z", "+"))
            p.st(Mem("X", "+"), 0)
        for _ in range(n - n_pad, 0):
            p.st(Mem("X", "+"), 1, comment="r1 is zero on entry")
    p.movw(24, 28)
    add_const(p, 24, 1 + r_off)
    for lo, off in ((22, a_off), (20, b_off)):
        p.movw(26, 28)
        add_const(p, 26, 1 + off)
        p.movw(lo, 26)
    move_arguments(p, inner.args)
    p.comment(f"=== the {8 * n_pad}-bit routine on the padded copies ===")
    p.extend(inner.body)
    p.phase(f"copy the low {2 * n} bytes of the product out")
    read_sp(p, 28)
    p.ldd(26, Mem("Y", disp=1))
    p.ldd(27, Mem("Y", disp=2))
    p.movw(30, 28)
    add_const(p, 30, 1 + r_off)
    for _ in range(2 * n):
        p.ld(0, Mem("Z", "+"))
        p.st(Mem("X", "+"), 0)
    p.phase("release the frame")
    add_const(p, 28, size)
    write_sp(p)
    return Kernel(p, {}, [f"operands padded from {n} to {n_pad} bytes", *inner.notes])
