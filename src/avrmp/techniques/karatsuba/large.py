"""Karatsubarized large operands (384 to 2048 bits): Karatsuba memory levels over the best fixed-size
Karatsuba routine, each distinct size emitted once as a local subroutine.

A routine for n bytes (n > 32) is a chain of subroutines: the memory level for n calls the one for
n/2 three times (L, H, M), down to a *leaf*, the fixed-size routine of `karatsuba` (multiplication)
or `karatsuba_sqr` (squaring) for n / 2^levels bytes.  Flash therefore grows with the number of
levels, not with 3^levels.  Calls do not depend on data: the code stays constant-time (identical
cycles and PC/address traces for every input).

Internal convention: a subroutine takes r in r25:r24, a in r23:r22, b in r21:r20 (as avr-gcc passes
them) and may clobber every register; a level below the top (and a leaf that defers its top,
Kernel.top_deferred) returns with its top bytes unrippled (a level with Z on them, a leaf with
its result pointer where it was, Kernel.r_pair), the value they are short by in r24:r25
(d and its sign byte) and, if its own children left values, H's first in r22:r23 (it lands k/2
bytes further up); the lowest level below the top combines in one interleaved pass and also
leaves its middle value e, by which byte 2k of its product is short, in r26.  The top level
reserves one stack frame for the whole call chain; each routine finds its part at a fixed
origin above its SP (see build):

    r, a, b (6)    L's and H's deferred values (2 each, 3 with middle values, when any)
    |A_l - A_h| (k)    |B_l - B_h| (k)    t (1, multiplication)    M (2k)

and runs, for k = n/2:  L = call(r, a, b);  H = call(r+2k, a+k, b+k);  the absolute differences
and t;  M = call(frame);  then the combination (level_combine), with Hbar = H + L_1 fused in:
U = (L_0 | Hbar_lo) + Hbar -/+ M into r[k..3k) and H_hi + carries into r[3k..4k), streaming the
bytes through X/Y/Z in chunks with the carries parked in registers.  Squaring always subtracts M.
A level below the top leaves its top bytes to its caller (combine.emit_top_deferred), and the
caller folds such deferred values into its combination (emit_level).
"""

from __future__ import annotations

from ...blocks.arith import emit_cond_negate, emit_ripple_mem
from ...blocks.pointers import move_arguments
from ...blocks.stack import move_sp, read_sp
from ...errors import AvrmpError
from ...program.program import Program
from ...regalloc.allocator import allocate
from ...regalloc.vprogram import VProgram
from ...target.avr.isa import Mem
from ...tuning.choices import Choices, memo_search
from ..kernel import Kernel
from .frame import (
    ARG_SLOT,
    Loc,
    add_const,
    frame_reader,
    frame_shift,
    reader_shift,
    save_pointers,
    set_pointers,
)
from .mul import fixed_mul_levels, karatsuba_mul, padded_mul
from .passes import MID_RETURN, absdiff_kept, emit_sub_absdiff, interleavable, level_combine
from .sqr import fixed_square, structures

LEAF_MAX = 32  # fixed-size routines exist up to 32 bytes (256 bits)
HALVING_SIZES = (f"a size that halves evenly down to a leaf of 72 (squaring: 64) to "
                 f"{8 * LEAF_MAX} bits that the fixed-size routine builds")  # large_levels
POOL = [*range(2, 24)]  # r24:r25 and r0:r1 hold parked pointers in the memory passes
ABSDIFF_POOL = [*range(26)]  # no pointer is parked while the differences are formed
FRAME_PTRS = 6


def is_large(n: int) -> bool:
    return n > LEAF_MAX


def _ptr_to(p: Program, lo: int, base_slot: int, off: int) -> None:
    """r[lo+1]:r[lo] = (pointer saved at Z+base_slot) + off, Z = SP."""
    p.ldd(lo, Mem("Z", disp=base_slot))
    p.ldd(lo + 1, Mem("Z", disp=base_slot + 1))
    add_const(p, lo, off)


def _frame_ptr(p: Program, lo: int, off: int, z_at: int = -1) -> None:
    """r[lo+1]:r[lo] = SP + 1 + off, Z holding SP + 1 + z_at (by default SP)."""
    p.movw(lo, 30)
    add_const(p, lo, off - z_at)


def _after_child(p: Program, values: int, slot: int | None, name: str, origin: int,
                 second_at: int = 0, mid: bool = False) -> int:
    """After the L or H call: Z reads the frame (frame_reader: returns the displacement still
    to add), and the child's deferred values (d in r24, d_2 in r22, its middle value e in r26)
    wait in their frame slot (SP+1+slot, in that order) for the combination.  second_at: d_2
    (with its sign byte, r23) is rippled first instead, into the child's bytes from second_at
    bytes above its top bytes (Z) on (H's, at a level below the top: see emit_level)."""
    kept = list(zip((24, 22), range(values)))
    if second_at:
        kept = [(0, 0)]  # d, out of the ripple's way: no allocation pool holds r0
        p.mov(0, 24)
        p.movw(24, 22, comment=f"{name}'s (d_2, f_2)")
        p.adiw(30, second_at, comment=f"Z = where {name}'s second value lands")
        _ripple_child_top(p, second_at)
    kept += [(MID_RETURN, 2)] * mid
    shift = frame_reader(p, 30, origin)
    if kept and 1 + shift + slot - origin + kept[-1][1] >= 64:  # beyond STD's reach of SP
        add_const(p, 30, shift)
        shift = 0
    for i, (reg, q) in enumerate(kept):
        p.std(Mem("Z", disp=1 + shift + slot - origin + q), reg,
              comment="" if i else f"{name}'s deferred values wait for the combination")
    return shift


def _ripple_child_top(p: Program, nbytes: int) -> None:
    """Finish a child's top bytes it left: Z points at them, (d, f) in r24:r25."""
    vp = VProgram()
    emit_ripple_mem(vp, "Z", nbytes, 25, first_src=24, name="child top")
    _run(p, vp)


def _push_deferred(p: Program, k: int, lay: dict[str, int], values: int, mul: bool,
                   top: bool, origin: int, mid: bool = False, z_in_m: int = 0) -> int:
    """After M's call (its deferred values d in r24, d_2 in r22, e in r26): each value with the
    others that land on the same bytes of U, in reverse of the order the combination pops them
    (passes.level_combine): H's for the top bytes (d_2 only at the top level, see emit_level;
    e_H first), s = d_L -/+ d_M + d_H for U_hi[k/2] and s_2 (+ d_H2 at the top level) for
    U_hi[3k/4] (s_e = e_L -/+ e_M + e_H for U_hi[0] first), L's for U_lo (e_L first).  Z is
    z_in_m bytes into M (where M's call left a pointer to its result); Z goes (by way of t's
    slot, multiplication) straight to where the frame reader must be once the values are
    pushed, and reads L's and H's slots from there if it reaches them.  Returns the bytes
    pushed."""
    p.comment("the children's deferred values, summed where they land and pushed")
    second = values == 2
    m_values = (24, 22) if second else (24,)
    # L's d, H's d and s in r18, r20, r24; L's d_2 and s_2 in r19, r22; H's d_2 in r21;
    # L's e, H's e and s_e in r16, r17, r26
    used = {18, 20, 24} | ({19, 22} if second else set()) | ({21} if second and top else set())
    used |= {16, 17, 26} if mid else set()
    order = [reg for reg in (21, 20, 17, 22, 24, 26, 19, 18, 16) if reg in used]
    reader = origin - reader_shift(origin + len(order)) - 1  # see frame_reader, after the pushes
    z_at = lay["m"] + z_in_m
    if mul:
        if lay["t"] == z_at - 1:  # t just below M: one pre-decrementing LD moves Z there
            p.ld(23, Mem("Z", "-"), comment="t")
        else:
            add_const(p, 30, lay["t"] - z_at)
            p.ldd(23, Mem("Z", disp=0), comment="t")
        z_at = lay["t"]
    # the slots are read from the reader's place where LDD reaches them, else from their own
    slot = {18: lay["l_top"], 19: lay["l_top"] + 1, 16: lay["l_top"] + 2,
            20: lay["h_top"], 21: lay["h_top"] + 1, 17: lay["h_top"] + 2}
    last = max(off for reg, off in slot.items() if reg in used)
    base = reader if last - reader <= 63 else lay["l_top"]
    add_const(p, 30, base - z_at)
    for reg, off in slot.items():  # L's slot, then H's (adjacent)
        if reg in used:
            p.ldd(reg, Mem("Z", disp=off - base))
    m_values += (MID_RETURN,) * mid
    if mul:
        p.com(23, comment="0xFF: M is subtracted")
        for d in m_values:
            emit_cond_negate(p, [d], 23)  # -/+ d_M
    else:
        for d in m_values:
            p.neg(d, comment="- d_M")
    p.add(24, 18)
    p.add(24, 20, comment="s = d_L - d_M + d_H")
    if mid:
        p.add(26, 16)
        p.add(26, 17, comment=f"s_e = e_L {'-/+' if mul else '-'} e_M + e_H")
    if second:
        p.add(22, 19, comment="s_2 = d_L2 - d_M2" + (" + d_H2" if top else ""))
        if top:
            p.add(22, 21)
    for reg in order:
        p.push(reg)
    add_const(p, 30, reader - base)
    return len(order)


# --- the routine -----------------------------------------------------------------------------------


def _layout(n: int, op: str, values: int = 0, mid: bool = False) -> dict[str, int]:
    """Frame offsets (from SP + 1) of a memory level for n bytes; after the pointers, where the
    children leave deferred values, two bytes each for L's and H's (l_top, h_top; three when
    they leave middle values too), kept there until M returns."""
    k = n // 2
    slot = 2 + mid
    da = FRAME_PTRS + (2 * slot if values else 0)
    lay = {"da": da} | ({"l_top": FRAME_PTRS, "h_top": FRAME_PTRS + slot} if values else {})
    if op == "mul":
        lay["db"] = da + k
        lay["t"] = da + 2 * k
        lay["m"] = lay["t"] + 1
    else:
        lay["m"] = da + k
    lay["size"] = lay["m"] + 2 * k
    return lay


def _run(p: Program, vp: VProgram, pool: list[int] = POOL) -> None:
    allocate(vp, pool, p)


def emit_level(p: Program, n: int, op: str, child: str, origin: int,
               alloc: int = 0, values: int = 0, branched: bool = False, mid: bool = False,
               interleave: bool = False, done: str | None = None,
               child_ptr: tuple[int, int] = (30, 0)) -> None:
    """The memory level for n bytes as a subroutine body (label already placed), or run inline
    with a jump to `done` at its end instead of a return.  Its frame lies `origin` bytes above
    SP+1; alloc: this is the top level, which reserves that many bytes (the frames of the whole
    call chain, see build) on entry and releases them at its end, and is the
    only level that finishes its own top bytes (a level below it leaves them to its caller,
    combine.emit_top_deferred, with H's first deferred value: see level_returns).  values:
    the child leaves that many values unrippled in its top quarter, which this level folds
    into its combination, except for H's second below the top level: that would be a third
    value to pass on, so it is rippled after H's call (k/4 bytes).  mid: the children are
    interleaved levels (they leave a middle value too); interleave: this one is (see
    passes.level_combine).  child_ptr: where a child that leaves values leaves a pointer, a
    pair and how far into its result (a leaf: its result pointer, Kernel.r_pair; a level: Z
    on its top bytes, 3k/2 in)."""
    k = n // 2
    lay = {name: origin + off for name, off in _layout(n, op, values, mid).items()}
    mul = op == "mul"
    own = lay["size"] - origin
    below = f", under it {alloc - own} bytes for the routines it calls" if alloc else ""
    slots = ", L's and H's deferred values" if values else ""
    p.phase(f"{8 * n}-bit Karatsuba level: frame of {own} bytes (pointers{slots}, differences, "
            f"M){below}")
    if alloc:
        move_sp(p, 28, -alloc, sbiw=False)
    else:
        read_sp(p, 28)
    save_pointers(p, frame_shift(p, 28, origin),
                  [("r", 24), ("a", 22)] + ([("b", 20)] if mul else []))
    p.comment(f"=== L = A_l {'* B_l' if mul else '^2'} ({8 * k} bits) ===")
    p.call(child)
    pair, off = child_ptr
    if values and pair == 30:  # the frame reader takes Z: L's pointer moves out of its way
        p.movw(18, 30, comment=f"R + {off}, for H's result pointer")
        pair = 18
    shift = _after_child(p, values, lay.get("l_top"), "L", origin, mid=mid)
    p.comment(f"=== H = A_h {'* B_h' if mul else '^2'} ===")
    _h_args(p, k, shift, mul, (pair, off) if values else None)
    p.call(child)
    z_after_h = None  # where Z is left on the frame (SP+1+offset), if it is
    if values:
        second_at = k // 4 if values == 2 and not alloc else 0
        assert not second_at or child_ptr == (30, 3 * k // 2), "the ripple starts at Z"
        shift = _after_child(p, values, lay["h_top"], "H", origin, second_at, mid)
        z_after_h = origin - shift - 1
    z_at = _emit_differences(p, k, mul, origin, lay, z_after_h)
    p.comment(f"=== M = |A_l - A_h|{' * |B_l - B_h|' if mul else '^2'} into the frame ===")
    _frame_ptr(p, 24, lay["m"], z_at)
    _frame_ptr(p, 22, lay["da"], z_at)
    if mul:
        _frame_ptr(p, 20, lay["db"], z_at)
    p.call(child)
    if values:
        if child_ptr[0] != 30:
            p.movw(30, child_ptr[0], comment="Z on M")
        pushed = _push_deferred(p, k, lay, values, mul, bool(alloc), origin, mid, child_ptr[1])
        origin += pushed  # SP has moved down: the frame is further above it
        lay = {name: off + pushed for name, off in lay.items()}
        shift = reader_shift(origin)  # Z is where frame_reader would have put it
    else:
        shift = frame_reader(p, 30, origin)
    r_slot = 1 + shift + ARG_SLOT["r"]
    p.ldd(24, Mem("Z", disp=r_slot), comment="r, for the combination's pointers")
    p.ldd(25, Mem("Z", disp=r_slot + 1))
    # branch-free, the combination takes t from the register the sums above left it in
    x_to = lay["m"] if not mul or t_in_register(op, values, branched) else lay["t"]
    _x_for_combination(p, x_to - lay["m"], child_ptr if values else None, x_to - origin + shift)
    _run(p, level_combination(k, op, values, bool(alloc), branched, mid, interleave))
    if alloc:
        p.phase("release the frames")
        move_sp(p, 28, alloc)
    if done is None:
        p.ret()
    else:
        p.jmp(done)


def level_combination(k: int, op: str, values: int, top: bool, branched: bool, mid: bool,
                      interleave: bool) -> VProgram:
    """A level's combination (level_combine) as emit_level runs it: a level below the top
    leaves its top bytes to its caller; branch-free multiplication with children's values
    takes t from r23, where the sums left it."""
    t_reg = 23 if t_in_register(op, values, branched) else None
    return level_combine(k, op == "mul", values=values, defer=not top, branched=branched,
                         mid=mid, interleave=interleave, t_reg=t_reg)


def t_in_register(op: str, values: int, branched: bool) -> bool:
    """Whether the combination takes t from r23 (branch-free multiplication whose children
    left values: the sums of those values read it there) rather than from the frame."""
    return op == "mul" and bool(values) and not branched


def _x_for_combination(p: Program, past_m: int, m_ptr: tuple[int, int] | None,
                       frame_off: int) -> None:
    """X to M + past_m for the combination: from Y where M's call left its result pointer in
    it (m_ptr: the pair and how far into M), else from Z on the frame (frame_off from it)."""
    if m_ptr is not None and m_ptr[0] == 28:
        p.movw(26, 28)
        add_const(p, 26, past_m - m_ptr[1])
    else:
        _frame_ptr(p, 26, frame_off)


def _h_args(p: Program, k: int, shift: int, mul: bool, from_l: tuple[int, int] | None) -> None:
    """H's arguments: r + 2k (from the pair L left a pointer in, that many bytes into R, if
    from_l; else from the frame), a + k and b + k from the frame (Z at SP, see frame_reader)."""
    if from_l is not None:
        p.movw(24, from_l[0])
        add_const(p, 24, 2 * k - from_l[1])
    else:
        _ptr_to(p, 24, 1 + shift + ARG_SLOT["r"], 2 * k)
    _ptr_to(p, 22, 1 + shift + ARG_SLOT["a"], k)
    if mul:
        _ptr_to(p, 20, 1 + shift + ARG_SLOT["b"], k)


def _emit_differences(p: Program, k: int, mul: bool, origin: int, lay: dict[str, int],
                      z_off: int | None) -> int:
    """|A_l - A_h| (and |B_l - B_h| and t) into the frame, Z starting at SP+1+z_off (None:
    unknown); returns the frame offset Z is left at (SP+1+offset): t (multiplication), or M,
    just after |A_l - A_h| (emit_sub_absdiff, which leaves Z after the bytes it stores)."""
    vp = VProgram()
    z_at = None if z_off is None else Loc("frame", z_off)
    keep = absdiff_kept(k)
    set_pointers(vp, z_at=z_at, origin=origin, X=Loc("a"), Y=Loc("a", k),
                 Z=Loc("frame", lay["da"] + keep))
    mask = emit_sub_absdiff(vp, k, "A")
    if mul:
        set_pointers(vp, z_at=Loc("frame", lay["da"] + k), origin=origin, X=Loc("b"),
                     Y=Loc("b", k), Z=Loc("frame", lay["db"] + keep))
        mask_b = emit_sub_absdiff(vp, k, "B")
        vp.eor(mask, mask_b, comment="t = sign(A_l - A_h) xor sign(B_l - B_h)")
        set_pointers(vp, z_at=Loc("frame", lay["db"] + k), origin=origin,
                     Z=Loc("frame", lay["t"]))
        vp.st(Mem("Z"), mask, comment="t, just below M")
    _run(p, vp, ABSDIFF_POOL)
    return lay["t"] if mul else lay["da"] + k


def level_plan(n: int, levels: int, leaf_defers: bool) -> tuple[list, list, list]:
    """Per level, top first: how many deferred values its children leave it, whether they leave
    middle values too, and whether it combines in one interleaved pass (the lowest level below
    the top, where it can)."""
    values = [0] * levels
    values[-1] = 1 if leaf_defers else 0
    for i in reversed(range(levels - 1)):
        values[i] = level_returns(values[i + 1])
    inter = [0 < i == levels - 1 and interleavable(n >> i) for i in range(levels)]
    mid = inter[1:] + [False]
    return values, mid, inter


def level_returns(values: int) -> int:
    """How many deferred values a level below the top leaves its caller when its children
    leave `values`: its own top bytes' (d, f), and H's first (it lands in those top bytes)."""
    return 1 + bool(values)


@memo_search
def leaf_kernel(op: str, nbytes: int, variant: str, origin: int, choices: Choices) -> Kernel:
    """The fixed-size routine under the levels.  Its full frame, if it has one, is reserved by
    the top level, `origin` bytes above the leaf's SP+1 (Kernel.caller_frame).  It leaves its
    top bytes to the lowest level where that measured cheaper (Kernel.top_deferred): a
    squaring's, and a multiplication's with three levels (see karatsuba_mul)."""
    if op == "mul":
        return karatsuba_mul(nbytes, variant, choices=choices, origin=origin, defer_top=True)
    return fixed_square(nbytes, choices, origin=origin, defer_top=True)


def large_levels(n: int, op: str = "mul") -> list[int]:
    """Memory levels that halve n down to a leaf the fixed-size routines support."""
    leaf_ok = fixed_mul_levels if op == "mul" else structures
    out = []
    for levels in range(1, 8):
        if n % (1 << levels):
            break
        leaf = n >> levels
        if leaf < 8:
            break
        # A multiplication over an 8-byte leaf would give the 64-byte level two values from
        # children that are not interleaved: its combination does not fit the registers.
        if leaf <= LEAF_MAX and leaf_ok(leaf) and not (op == "mul" and leaf == 8):
            out.append(levels)
    return out


@memo_search
def build(n: int, op: str, levels: int, variant: str, ret_bytes: int,
          choices: Choices) -> Kernel:
    """n-byte operands by `levels` memory levels over the fixed-size leaf; its calls and jumps
    are CALL/JMP only where RCALL/RJMP do not reach (Program.relax_calls).
    ret_bytes: a return address's size on the stack (the frames lie that much further above
    each callee's SP)."""
    leaf = n >> levels
    # One frame for the whole call chain, reserved by the top level: from SP+1 up, the leaf's,
    # then each level's from the deepest up.  A routine i calls deep sees it i return addresses
    # further above its own SP+1.
    kern = choices.choose(
        "leaf", [8 * leaf],
        lambda _, c: leaf_kernel(op, leaf, variant, ret_bytes * levels, choices=c),
        cost=lambda _: 0)
    return _emit_levels(n, op, levels, kern, ret_bytes, variant == "branched")


def _emit_levels(n: int, op: str, levels: int, kern: Kernel, ret_bytes: int,
                 branched: bool) -> Kernel:
    """The routine: the top level inline (its frame lies above no return address of its
    own, so nothing moves), then each lower level's subroutine and the leaf's."""
    leaf = n >> levels
    values, mid, inter = level_plan(n, levels, bool(kern.top_deferred))
    origins, below = [0] * levels, kern.caller_frame
    for i in reversed(range(levels)):
        origins[i] = ret_bytes * i + below
        below += _layout(n >> i, op, values[i], mid[i])["size"]
    p = Program(label_prefix="kl_")  # the levels' signed arms, apart from the leaf's
    label = {m: f"kl_{op}{8 * m}" for m in (n >> i for i in range(levels + 1))}
    for i in range(levels):
        m = n >> i
        if i:
            p.label(label[m])
        # a leaf leaves its result pointer, a level Z on its top bytes (3/4 into its result)
        child_ptr = (kern.r_pair, 0) if i == levels - 1 else (30, 3 * (m // 2) // 2)
        emit_level(p, m, op, label[m // 2], origins[i], alloc=below if i == 0 else 0,
                   values=values[i], branched=branched, mid=mid[i], interleave=inter[i],
                   done=None if i else "kl_done", child_ptr=child_ptr)
    p.label(label[leaf])
    p.comment(f"=== leaf: {8 * leaf}-bit fixed-size Karatsuba {op} ===")
    move_arguments(p, kern.args)
    p.extend(kern.body)
    p.ret()
    p.label("kl_done")
    p.relax_calls()  # CALL/JMP only where RCALL/RJMP do not reach
    notes = [
        (f"{levels} Karatsuba memory level{'s' if levels > 1 else ''} as subroutines over a "
         f"{8 * leaf}-bit leaf (each size emitted once, called for L, H and M); "
         f"frames of the levels{' and the leaf' if kern.caller_frame else ''}: {below} bytes, "
         f"reserved once"),
        *(f"leaf: {note}" for note in kern.notes),
    ]
    return Kernel(p, {}, notes)


def large_kernel(n: int, op: str, variant: str, choices: Choices, levels: int | None = None,
                 ret_bytes: int = 2) -> Kernel:
    """n-byte operands by memory levels over a fixed-size leaf: `levels` of them, or the fastest
    number (by the branch-free build's cost; a NOP-balanced branch costs the same)."""
    options = large_levels(n, op)
    if not options:
        raise AvrmpError(f"--bits {8 * n}: large Karatsuba needs {HALVING_SIZES} (for "
                         "example 384, 512, 768, 1024, 1536, 2048 bits)")
    if levels is not None and levels not in options:
        raise AvrmpError(
            f"--levels {levels}: above 256 bits --levels counts the memory levels (called "
            f"subroutines) over the fixed-size leaf; {8 * n} bits allows "
            f"{', '.join(map(str, options))}"
        )
    return choices.choose_by(
        "levels", options if levels is None else [levels],
        probe=lambda lv, c: build(n, op, lv, "branchfree", ret_bytes, choices=c),
        cost=lambda kern: kern.body.static_cycles(choices.core),
        build=lambda lv, c: build(n, op, lv, variant, ret_bytes, choices=c))


def karatsuba_mul_any(n: int, variant: str, choices: Choices, levels: int | None = None,
                      ret_bytes: int = 2) -> Kernel:
    """`--algo karatsuba` multiplication: the fixed-size routine up to 256 bits, memory levels over
    it above."""

    def supported(m: int) -> bool:
        return bool(large_levels(m)) if is_large(m) else bool(fixed_mul_levels(m))

    if not supported(n):
        # No split fits (an odd size above the largest base): run the next size that has one
        # on zero-padded copies.
        if levels is not None:
            raise AvrmpError(
                f"--levels: {8 * n}-bit Karatsuba has no split of its own (it runs on "
                f"zero-padded operands); leave --levels out"
            )
        n_pad = next(m for m in range(n + 1, 2 * n + 2) if supported(m))
        return padded_mul(n, n_pad, karatsuba_mul_any(n_pad, variant, choices,
                                                      ret_bytes=ret_bytes))
    if is_large(n):
        return large_kernel(n, "mul", variant, choices, levels, ret_bytes)
    return karatsuba_mul(n, variant, levels, choices)


def karatsuba_sqr_any(n: int, variant: str, choices: Choices, levels: int | None = None,
                      ret_bytes: int = 2) -> Kernel:
    """`--algo karatsuba` squaring: the fixed-size routine up to 256 bits (sqr.py), memory levels
    over it above."""
    if variant == "branched":
        raise AvrmpError(
            "--variant branched: Karatsuba squaring has no sign to branch on; "
            "use --variant branchfree"
        )
    if is_large(n):
        return large_kernel(n, "sqr", variant, choices, levels, ret_bytes)
    if not structures(n):  # odd, above a plain square and not halving into bases
        unbuilt = ", ".join(map(str, unbuilt_square_bits()))
        raise AvrmpError(f"--bits {8 * n}: Karatsuba squaring up to {8 * LEAF_MAX} bits does not "
                         f"build {unbuilt} bits (odd byte counts that do not halve into its "
                         f"bases): choose {8 * n + 8} bits or --algo product-scanning")
    return fixed_square(n, choices, levels)


def unbuilt_square_bits() -> list[int]:
    """The sizes in bits up to the largest leaf that Karatsuba squaring does not build."""
    return [8 * m for m in range(2, LEAF_MAX + 1) if not structures(m)]


def sqr_limits() -> str:
    """What `avrmp list` adds to the algorithm's sizes and variants."""
    return (f"sqr: branchfree only, not {', '.join(map(str, unbuilt_square_bits()))} bits; "
            f"above {8 * LEAF_MAX} bits, {HALVING_SIZES} (mul runs other sizes on zero-padded "
            "operands)")


LEAF_STACK = 128  # bound on a fixed-size leaf's frame (the 256-bit multiplication leaf: 112)


def stack_estimate(op: str, n: int, levels: int | None = None, ret_bytes: int = 2) -> int:
    """Upper bound on the stack bytes a Karatsuba routine for n-byte operands uses below its
    return address (for deciding whether an MCU's SRAM holds it); 0 for the fixed sizes, whose
    frames are small."""
    if op not in ("mul", "sqr") or not is_large(n):
        return 0
    options = large_levels(n, op)
    if not options:  # runs on zero-padded copies (see karatsuba_mul_any): a rough upper bound
        return 8 * n + LEAF_STACK
    levels = max(options) if levels is None else levels
    frames = sum(_layout(n >> i, op, 2, True)["size"] for i in range(levels))
    return frames + ret_bytes * (levels + 1) + LEAF_STACK
