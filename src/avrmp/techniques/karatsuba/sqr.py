"""Karatsuba squaring for fixed sizes up to 256 bits (multiplication's structure, one operand).

* The base (sqr_base.py) is one Karatsuba level in registers, each of its three half-size squares
  by product-scanning squaring (`blocks.square.emit_square`: each cross product once, doubled);
  for small sizes a plain in-register square (no Karatsuba level) may be faster, and the cost
  model picks.
* A memory level splits an even n into an L child, an H child that adds L_1 into its square
  (Hbar, fused when the child is a base; over plain bases L and Hbar are one block, L_1 kept in
  registers between the two squares, and M may join that block too) and an M child that squares
  |A_l - A_h|.  When the M child is a base it computes the difference in registers and finishes
  the parent's combination itself; otherwise the difference and M go to the stack frame and a
  memory pass combines.
* Sizes of 48 bytes and more (384 bits up) are built by large.py from the fixed sizes.

Every block is straight-line code: branch-free by construction.
"""

from __future__ import annotations

import itertools

from ...blocks.arith import emit_abs_diff
from ...blocks.pointers import load_disp, move_pointer, store_disp
from ...errors import AvrmpError
from ...program.program import Program
from ...regalloc.allocator import allocate
from ...regalloc.vprogram import AllocationError, VProgram
from ...tuning.choices import Choices, memo_search
from ..kernel import Kernel
from .combine import TOP_RETURN, emit_mem_add_l1
from .frame import (
    ARG_SLOT,
    SCRATCH,
    SCRATCH_OFF,
    Frame,
    Loc,
    add_const,
    close_frame,
    frame_reader,
    load_saved_pointer,
    open_frame,
    set_pointers,
    z_slots,
)
from .search import (
    BASE_POOL,
    CLEAN_BIAS,
    JITTER_KEEP,
    LIVE_AFTER_BLOCK,
    emit_chosen,
    jitter_picks,
    recoloured_cycles,
)
from .sqr_base import SqrCombine, emit_sqr_base

MAX_SQR_BASE = 20  # the largest one-level base (bytes) tried; beyond it the allocation runs dry
PLAIN_MAX = 24  # the largest size tried as a plain in-register square (no Karatsuba level)

SQUARE_WIDTHS = (2, 4, 6)  # emit_square chunk widths tried per base
COMBINE_WIDTHS = (4, 6)  # a parent's combination's chunk widths tried (SqrCombine; 4 the default)
RECOLOURED = 4  # the cheapest allocations of a base recoloured before the choice
# A squaring base lends r1:r0 between its MULs (emit_square), so its recolouring may move
# values there too (MUL's own results stay: recolor.Problem).
SQUARE_POOL = range(32)


def _run(p: Program, spill, choices: Choices, ptrs: dict | None = None, follow: bool = False,
         **kw) -> None:
    """A base block, with Y lent for spills into the frame's scratch, released into the register
    pool or kept on the operand, with each chunk width of the squares, a single or paired zero
    register and each eviction preference, whichever allocation is cheapest once recoloured
    (recorded as "base", with the block's exact recolouring inside it: search.recoloured_cycles).
    ptrs (see _point) learns whether Y survives (kept on the operand, it needs no reload from
    the frame for a following base: `follow` charges the others that reload; without a frame,
    Y is kept unless this is the last base)."""
    scratch = kw.pop("scratch", 0)
    live_out = LIVE_AFTER_BLOCK | (TOP_RETURN if kw.get("defer_top") else frozenset())
    pick = emit_chosen(
        p, choices, "base", "squaring base",
        lambda: _search_base(p, spill, choices, ptrs, follow, scratch, kw, live_out),
        lambda pick: _allocate_base(p, spill, pick, kw), live_out, SQUARE_POOL)
    if ptrs is not None and not pick["keep_y"]:
        ptrs.pop("Y", None)


def _allocate_base(p: Program, spill, pick: dict, kw: dict) -> Program | None:
    vp = VProgram()
    emit_sqr_base(vp, **{k: v for k, v in pick.items() if k not in ("bias", "seed")}, **kw)
    trial = Program()
    try:
        allocate(vp, BASE_POOL, trial, spill_slots=spill, labels_from=p,
                 clean_bias=pick.get("bias", 0), jitter=pick.get("seed", 0))
    except AllocationError:
        return None
    return trial


def _search_base(p: Program, spill, choices: Choices, ptrs: dict | None, follow: bool,
                 scratch: int, kw: dict, live_out: frozenset[int]
                 ) -> tuple[dict, Program, int, str]:
    """The cheapest pick (see _run), its code, its cycles and its recolouring: every pick
    allocated, and (choices.jitter) the cheapest one's jittered allocations too, the RECOLOURED
    cheapest recoloured (the recolouring moves a few cycles, and sometimes the ranking)."""
    core = choices.core
    frameless = ptrs is not None and ptrs.get("frameless")
    if kw.get("joint") and not kw.get("whole"):  # Y stays on A until A_h's last byte is in
        y_roles = [(0, True)]
    elif frameless:  # Y released into the pool only by the last base: no pointer can be reloaded
        y_roles = [(0, True)] + ([] if follow else [(0, False)])
    else:
        y_roles = [(s, False) for s in sorted({scratch, 0})] + [(0, True)]
    # the joint block's second square (Hbar) may take another chunk width than the first, a
    # parent's combination another than its default
    widths_h = SQUARE_WIDTHS if kw.get("joint") else (None,)
    widths_c = COMBINE_WIDTHS if kw.get("parent") or kw.get("whole") else (COMBINE_WIDTHS[0],)
    # a whole level's difference over either half (see emit_sqr_base)
    over_h = (False, True) if kw.get("whole") else (False,)
    found = []
    for (s, keep_y), w, w_h, w_c, diff_over_h, pair_zero, bias in itertools.product(
            y_roles, SQUARE_WIDTHS, widths_h, widths_c, over_h, (False, True), CLEAN_BIAS):
        pick = {"scratch": s, "keep_y": keep_y, "w": w, "pair_zero": pair_zero}
        if w_h not in (None, w):  # the defaults stay out of the record
            pick["w_h"] = w_h
        if w_c != COMBINE_WIDTHS[0]:
            pick["w_c"] = w_c
        if diff_over_h:
            pick["diff_over_h"] = True
        if bias:
            pick["bias"] = bias
        trial = _allocate_base(p, spill, pick, kw)
        if trial is not None:
            extra = RELOAD_Y if follow and not keep_y else 0
            found.append((trial.static_cycles(core) + extra, len(found), pick, trial, extra))
    if not found:
        raise AllocationError(f"no register allocation for the {kw['m']}-byte squaring base")
    _, _, best, _, extra = min(found, key=lambda f: f[:2])
    for jittered in jitter_picks(best, choices.jitter):
        trial = _allocate_base(p, spill, jittered, kw)
        if trial is not None:
            found.append((trial.static_cycles(core) + extra, len(found), jittered, trial, extra))

    def recoloured(entry: tuple) -> tuple[int, int, dict, Program, str]:
        _, order, pick, trial, extra = entry
        cycles, colours = recoloured_cycles(trial, live_out, core, SQUARE_POOL)
        return cycles + extra, order, pick, trial, colours

    keep = RECOLOURED + (JITTER_KEEP if choices.jitter else 0)
    cheapest = sorted(found, key=lambda f: f[:2])[:keep]
    cost, _, pick, trial, colours = min(map(recoloured, cheapest), key=lambda r: r[:2])
    return pick, trial, cost, colours


RELOAD_Y = 15  # re-pointing Y through the frame (IN, IN, LDD, LDD, MOV) plus saving the pointers


def _point(p: Program, ptrs: dict, **locs: Loc) -> None:
    """Point Y/Z at locs: by ADIW/SBIW from where ptrs says they point, else through the frame's
    saved entry pointers (ptrs["frame"] records which are read: Frame.read).  ptrs is updated."""
    reload = {}
    for ptr, loc in locs.items():
        cur = ptrs.get(ptr)
        if cur is not None and cur.base == loc.base and abs(loc.off - cur.off) <= 63:
            move_pointer(p, ptr, loc.off - cur.off)
        else:
            reload[ptr] = loc
    if reload:
        if ptrs.get("frameless"):
            raise AllocationError("a pointer must be reloaded but there is no frame")
        if set(reload) == {"Y"} and reload["Y"].base != "frame":
            loc, frame = reload["Y"], ptrs["frame"]  # Z stays: Y reads its saved pointer itself
            shift = frame_reader(p, 28, frame.origin)
            load_saved_pointer(p, "Y", "Y", 1 + shift + ARG_SLOT[loc.base])
            frame.read.add(loc.base)
            add_const(p, 28, loc.off)
        elif "Z" not in reload and ("Z" in locs or "Z" in ptrs):
            z = locs.get("Z", ptrs.get("Z"))  # Z stays (moved above): Y reads the frame
            _reload(p, ptrs, z_at=z, Z=z, **reload)
        else:
            _reload(p, ptrs, **reload)
    ptrs.update(locs)


def _forget(ptrs: dict) -> None:
    """After a pass that moves its pointers: Y and Z point nowhere known (the frame's
    bookkeeping in ptrs stays)."""
    ptrs.pop("Y", None)
    ptrs.pop("Z", None)


def _reload(p: Program, ptrs: dict, z_at: Loc | None = None, **locs: Loc) -> None:
    """Point Y/Z at locs through the frame's saved entry pointers (the frame saves only those
    some block reads: Frame.read); z_at: where Z points (see set_pointers)."""
    set_pointers(p, z_at=z_at, frame=ptrs["frame"], **locs)


# --- memory levels (sizes up to 32 bytes: every displacement stays within 0..63) -------------------


def emit_sqr_node(p: Program, n: int, levels: int, plain: bool, a: Loc, out: Loc,
                  frame: Frame, ptrs: dict, choices: Choices, defer_top: bool = False) -> None:
    """out[0..2n) = a[0..n)^2 with `levels` levels (1 = a base in registers).  ptrs: where Y and
    Z are known to point (see _point).  defer_top: leave the top bytes to the caller
    (SqrCombine)."""
    k = n // 2
    scratch = 0 if ptrs.get("frameless") else SCRATCH
    spill = {"scratch": scratch, "scratch_off": frame.origin + SCRATCH_OFF}
    if levels == 1:
        _point(p, ptrs, Y=a, Z=out)
        _run(p, z_slots((n + 1) // 2, 2 * n), choices, ptrs, True, m=n, plain=plain, **spill)
        return
    if levels == 2 and plain:
        _emit_joint_level(p, n, a, out, ptrs, choices, spill, defer_top)
        return
    _emit_l_and_hbar(p, n, levels, plain, a, out, frame, ptrs, choices, spill)
    p.comment(f"=== {8 * n}-bit level: M = |A_l - A_h|^2, combine ===")
    if levels == 2:
        _point(p, ptrs, Y=a, Z=out)
        _run(p, z_slots(k, 2 * k), choices, ptrs, m=k, absdiff=True, parent=True, plain=plain,
             defer_top=defer_top, **spill)
        return
    _emit_m_and_combine(p, k, levels, plain, a, out, frame, ptrs, choices, defer_top)


def _emit_joint_level(p: Program, n: int, a: Loc, out: Loc, ptrs: dict, choices: Choices,
                      spill: dict, defer_top: bool) -> None:
    """A level over plain bases: L and Hbar in one block (L_1 passes from L's square to Hbar's
    in registers), then M in a second block ("joint"), or all three in one ("whole": A_h's
    bytes still in registers after Hbar's square are M's subtrahend), whichever is cheaper.
    (A form tried and not taken may have marked an entry pointer as read: Frame.read only
    grows, and saving a pointer no block reads is harmless.)"""
    k = n // 2
    start = dict(ptrs)

    def build(form: str, c: Choices) -> tuple[Program, dict]:
        q, qptrs, whole = Program(), dict(start), form == "whole"
        what = "L = A_l^2, Hbar = A_h^2 + L_1" + (", M, combine" if whole else "")
        q.comment(f"=== {8 * n}-bit squaring level (2 levels): {what} ===")
        _point(q, qptrs, Y=a, Z=out)
        _run(q, z_slots((k + 1) // 2, 4 * k), c, qptrs, not whole, m=k, joint=True,
             plain=True, whole=whole, defer_top=defer_top and whole, **spill)
        if not whole:
            q.comment(f"=== {8 * n}-bit level: M = |A_l - A_h|^2, combine ===")
            _point(q, qptrs, Y=a, Z=out)
            _run(q, z_slots(k, 2 * k), c, qptrs, m=k, absdiff=True, parent=True, plain=True,
                 defer_top=defer_top, **spill)
        return q, qptrs

    q, qptrs = choices.choose("level", ("joint", "whole"), build,
                              cost=lambda r: r[0].static_cycles(choices.core))
    p.extend(q)
    ptrs.clear()
    ptrs.update(qptrs)


def _emit_l_and_hbar(p: Program, n: int, levels: int, plain: bool, a: Loc, out: Loc,
                     frame: Frame, ptrs: dict, choices: Choices, spill: dict) -> None:
    """A level's L and Hbar = H + L_1 as two children (L_1 through memory)."""
    k = n // 2
    p.comment(f"=== {8 * n}-bit squaring level ({levels} levels): L = A_l^2 ===")
    emit_sqr_node(p, k, levels - 1, plain, a, out, frame, ptrs, choices)
    p.comment(f"=== {8 * n}-bit level: Hbar = A_h^2 + L_1 ===")
    if levels == 2:  # Y and Z stay where the L base had them: displacements reach A_h and Hbar
        _point(p, ptrs, Y=a, Z=out)
        _run(p, z_slots(2 * k + (k + 1) // 2, 4 * k), choices, ptrs, True, m=k, src_off=k,
             out_off=2 * k, addend_off=k, plain=plain, **spill)
    else:
        emit_sqr_node(p, k, levels - 1, plain, a + k, out + 2 * k, frame, ptrs, choices)
        _point(p, ptrs, Z=out + k)
        vp = VProgram()
        emit_mem_add_l1(vp, k)
        allocate(vp, BASE_POOL, p)
        _forget(ptrs)  # the pass may move its pointers


def _emit_m_and_combine(p: Program, k: int, levels: int, plain: bool, a: Loc, out: Loc,
                        frame: Frame, ptrs: dict, choices: Choices, defer_top: bool) -> None:
    """A level above two: |A_l - A_h| and M = its square into the frame, then the combination."""
    diff = frame.alloc(k)
    _reload(p, ptrs, Y=a, Z=diff)
    vp = VProgram()
    zero = vp.v("zero")
    vp.clr(zero)
    vp.phase(f"|A_l - A_h| ({k} bytes) into the frame")
    x = load_disp(vp, "Y", 0, k, "a")
    emit_abs_diff(vp, x, lambda i: load_disp(vp, "Y", k + i, 1, "a'", first=i)[0], zero)
    store_disp(vp, "Z", 0, x, "d")
    allocate(vp, BASE_POOL, p)
    _forget(ptrs)
    prod = frame.alloc(2 * k)
    emit_sqr_node(p, k, levels - 1, plain, diff, prod, frame, ptrs, choices)
    _reload(p, ptrs, Y=prod, Z=out)
    vp = VProgram()
    zero = vp.v("zero")
    vp.clr(zero)
    combine = SqrCombine(vp, k, zero, defer=defer_top)
    for i in range(2 * k):
        combine.push(load_disp(vp, "Y", i, 1, "m", first=i)[0])
    allocate(vp, BASE_POOL, p)
    _forget(ptrs)
    frame.free(diff)


def structures(n: int) -> list[tuple[int, bool]]:
    """(levels, plain base) pairs that fit n bytes."""
    out = []
    for levels in range(1, 5):
        m = n >> (levels - 1)
        if n % (1 << (levels - 1)) or m < 2:
            break
        if levels > 1 and 4 * (n >> 1) - 1 > 63:
            continue  # the combination reaches R through Z displacements
        if m <= PLAIN_MAX:
            out.append((levels, True))
        if 3 <= m <= MAX_SQR_BASE:
            out.append((levels, False))
    return out


@memo_search
def build_fixed(n: int, levels: int, plain: bool, origin: int | None, defer_top: bool,
                choices: Choices) -> Kernel:
    """The n-byte squaring with this structure.  As a subroutine of a large routine: origin, the
    caller reserves the frame, `origin` bytes above the callee's SP+1 (Kernel.caller_frame says
    how many bytes), so the routine moves no SP; defer_top, the caller finishes the top bytes
    (Kernel.top_deferred).  Two levels may run without a frame: Y kept on the operand by every
    base, no pointer to save."""
    if levels == 1:
        p = Program()
        _run(p, z_slots((n + 1) // 2, 2 * n), choices, m=n, plain=plain)
        return Kernel(p, {"a": 28, "r": 30}, [_note(n, levels, plain)])

    def build(layout: str, c: Choices) -> Kernel:
        if layout == "frameless":
            return _frameless(n, plain, c, defer_top)
        return _framed(n, levels, plain, c, origin, defer_top)

    return choices.choose("layout", ("framed", "frameless") if levels == 2 else ("framed",),
                          build, cost=lambda kern: kern.body.static_cycles(choices.core))


def fixed_square(n: int, choices: Choices, levels: int | None = None, origin: int | None = None,
                 defer_top: bool = False) -> Kernel:
    """The fastest structure (levels, plain base) for n bytes, compared as stand-alone routines,
    built for its place (origin, defer_top: see build_fixed)."""
    opts = [o for o in structures(n) if levels is None or o[0] == levels]
    if not opts:
        allowed = ", ".join(str(lv) for lv in sorted({o[0] for o in structures(n)}))
        raise AvrmpError(f"--levels {levels}: {8 * n}-bit Karatsuba squaring supports levels "
                         f"{allowed} (each memory level halves an even size)")
    try:
        return choices.choose_by(
            "structure", opts,
            probe=lambda o, c: build_fixed(n, *o, None, False, choices=c),
            cost=lambda kern: kern.body.static_cycles(choices.core),
            build=lambda o, c: build_fixed(n, *o, origin, defer_top, choices=c))
    except AllocationError:
        raise AvrmpError(
            f"{8 * n}-bit Karatsuba squaring: no structure fits this size"
            + (f" with --levels {levels}" if levels is not None else "")
        ) from None


def plain_square(n: int, choices: Choices) -> Kernel:
    """The n-byte square as one register-allocated product-scanning block (no Karatsuba level)."""
    p = Program()
    _run(p, z_slots((n + 1) // 2, 2 * n), choices, m=n, plain=True)
    return Kernel(p, {"a": 28, "r": 30}, ["product-scanning square in registers (emit_square)"])


def _frameless(n: int, plain: bool, choices: Choices, defer_top: bool = False) -> Kernel:
    p = Program()
    ptrs = {"frameless": True, "Y": Loc("a"), "Z": Loc("r")}
    emit_sqr_node(p, n, 2, plain, Loc("a"), Loc("r"), Frame(), ptrs, choices, defer_top)
    return Kernel(p, {"a": 28, "r": 30}, [_note(n, 2, plain) + ", no stack frame"],
                  top_deferred=n // 2 if defer_top else 0, r_pair=30)


def _framed(n: int, levels: int, plain: bool, choices: Choices, origin: int | None = None,
            defer_top: bool = False) -> Kernel:
    frame = Frame(origin or 0)
    body = Program()
    # Y and Z are set from the argument registers with the frame.
    ptrs = {"Y": Loc("a"), "Z": Loc("r"), "frame": frame}
    emit_sqr_node(body, n, levels, plain, Loc("a"), Loc("r"), frame, ptrs, choices, defer_top)
    size = frame.size - frame.origin
    p = Program()
    saves = [(name, lo) for name, lo in (("r", 24), ("a", 22)) if name in frame.read]
    open_frame(p, size, origin, saves)
    p.movw(28, 22, comment="Y = a")
    if origin is not None:  # with its own frame, the wrapper sets Z before the core
        p.movw(30, 24, comment="Z = r")
    p.extend(body)
    note = _note(n, levels, plain) + f", frame {size} bytes"
    if origin is not None:
        return Kernel(p, {}, [note + " (reserved by the caller)"], caller_frame=size,
                      top_deferred=n // 2 if defer_top else 0, r_pair=30)
    close_frame(p, size)
    return Kernel(p, {"r": 30}, [note])


def _note(n: int, levels: int, plain: bool) -> str:
    base = n >> (levels - 1)
    kind = "plain product-scanning square" if plain else "1 Karatsuba level in registers"
    mem = f"{levels - 1} memory level{'s' if levels > 2 else ''} over " if levels > 1 else ""
    return f"Karatsuba squaring: {mem}base {base} bytes ({kind})"
