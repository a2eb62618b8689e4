"""Karatsubarized large operands (384 to 2048 bits): Karatsuba memory levels over the best fixed-size
Karatsuba routine, each distinct size emitted once as a local subroutine.

A routine for n bytes (n > 32) is a chain of subroutines: the memory level for n calls the one for
n/2 three times (L, H, M), down to a *leaf*, the fixed-size routine of `karatsuba` (multiplication)
or `karatsuba_sqr` (squaring) for n / 2^levels bytes.  Flash therefore grows with the number of
levels, not with 3^levels.  Calls do not depend on data: the code stays constant-time (identical
cycles and PC/address traces for every input).

Internal convention: a subroutine takes r in r25:r24, a in r23:r22, b in r21:r20 (as avr-gcc passes
them) and may clobber every register.  The top level reserves one stack frame for the whole call
chain; each routine finds its part at a fixed origin above its SP (see build):

    r, a, b (6)    deferred (d, f) of L (and at the top of H) (2 each, see _folded)
    |A_l - A_h| (k)    |B_l - B_h| (k)    t (1, multiplication)    M (2k)

and runs, for k = n/2:  L = call(r, a, b);  H = call(r+2k, a+k, b+k);  the absolute differences
and t;  M = call(frame);  then the combination (level_combine), with Hbar = H + L_1 fused in:
U = (L_0 | Hbar_lo) + Hbar -/+ M into r[k..3k) and H_hi + carries into r[3k..4k), streaming the
bytes through X/Y/Z in chunks with the carries parked in registers.  Squaring always subtracts M.
A level below the top leaves its top bytes to its caller (sqr_base.emit_top_deferred).
"""

from __future__ import annotations

from ...blocks.arith import emit_ripple_mem
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
    save_pointers,
    set_pointers,
)
from .mul import karatsuba_mul, padded_mul
from .mul import level_options as fixed_mul_levels
from .passes import emit_sub_absdiff, level_combine
from .sqr import fixed_square, structures

LEAF_MAX = 32  # fixed-size routines exist up to 32 bytes (256 bits)
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


def _frame_ptr(p: Program, lo: int, off: int) -> None:
    """r[lo+1]:r[lo] = SP + 1 + off (Z must hold SP)."""
    p.movw(lo, 30)
    add_const(p, lo, 1 + off)


def _call(p: Program, label: str, far: bool) -> None:
    (p.call if far else p.rcall)(label)


def _frame_pair(p: Program, slot: int, store: bool, comment: str) -> None:
    """r25:r24 to (store) or from the two frame bytes at SP+1+slot, through Z."""
    read_sp(p, 30)
    add_const(p, 30, 1 + slot)
    for q, reg in enumerate((24, 25)):
        if store:
            p.std(Mem("Z", disp=q), reg, comment=comment if not q else "")
        else:
            p.ldd(reg, Mem("Z", disp=q), comment=comment if not q else "")


def _after_child(p: Program, child_top: int, slot: int | None, name: str) -> None:
    """After the L or H call: the child's deferred (d, f) wait in their frame slot (the level
    folds them into its combination, see _folded) or are rippled into its top bytes now."""
    if slot is not None:
        _frame_pair(p, slot, store=True, comment=f"{name}'s (d, f) wait for the combination")
    else:
        _ripple_child_top(p, child_top)


def _ripple_child_top(p: Program, nbytes: int) -> None:
    """Finish a child's top bytes it left (sqr_base.emit_top_deferred): Z points at them,
    (d, f) in r24:r25."""
    if nbytes:
        vp = VProgram()
        emit_ripple_mem(vp, "Z", nbytes, 25, first_src=24, name="child top")
        _run(p, vp)


# --- the routine -----------------------------------------------------------------------------------


def _folded(top: bool, child_top: int) -> tuple[str, ...]:
    """The children (besides M) whose deferred top bytes a level folds into its combination, in
    the order of their frame slots (their pushes run the other way): L's where its children
    defer theirs, and H's too at the top level (a level whose own top bytes
    are deferred would have to ripple H's through them, which costs what the ripple does)."""
    return (("L", "H") if top else ("L",)) if child_top else ()


def _layout(n: int, op: str, folded: tuple[str, ...] = ()) -> dict[str, int]:
    """Frame offsets (from SP + 1) of a memory level for n bytes; after the pointers, two bytes
    for each folded child's (d, f) (l_top, h_top), kept there until M returns."""
    k = n // 2
    da = FRAME_PTRS + 2 * len(folded)
    lay = {"da": da} | {f"{c.lower()}_top": FRAME_PTRS + 2 * i for i, c in enumerate(folded)}
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


def emit_level(p: Program, n: int, op: str, child: str, far: bool, origin: int,
               alloc: int = 0, child_top: int = 0, branched: bool = False) -> None:
    """The memory level for n bytes as a subroutine body (label already placed).  Its frame lies
    `origin` bytes above SP+1; alloc: this is the top level, which reserves that many bytes (the
    frames of the whole call chain, see build) on entry and releases them on return, and is the
    only level that finishes its own top bytes (a level below it leaves them to its caller,
    sqr_base.emit_top_deferred).  child_top: the child does that: this level ripples the
    child's top bytes after H (not at the top level, see _folded) and folds M's and L's into its
    combination."""
    k = n // 2
    folded = _folded(bool(alloc), child_top)
    lay = {name: origin + off for name, off in _layout(n, op, folded).items()}
    mul = op == "mul"
    own = lay["size"] - origin
    below = f", under it {alloc - own} bytes for the routines it calls" if alloc else ""
    owners = " and ".join(f"{c}'s" for c in folded)
    slots = f", {owners} deferred (d, f)" if folded else ""
    p.phase(f"{8 * n}-bit Karatsuba level: frame of {own} bytes (pointers{slots}, differences, "
            f"M){below}")
    if alloc:
        move_sp(p, 28, -alloc, sbiw=False)
    else:
        read_sp(p, 28)
    save_pointers(p, frame_shift(p, 28, origin),
                  [("r", 24), ("a", 22)] + ([("b", 20)] if mul else []))
    p.comment(f"=== L = A_l {'* B_l' if mul else '^2'} ({8 * k} bits) ===")
    _call(p, child, far)
    _after_child(p, child_top, lay.get("l_top"), "L")
    p.comment(f"=== H = A_h {'* B_h' if mul else '^2'} ===")
    shift = frame_reader(p, 30, origin)
    _ptr_to(p, 24, 1 + shift + ARG_SLOT["r"], 2 * k)
    _ptr_to(p, 22, 1 + shift + ARG_SLOT["a"], k)
    if mul:
        _ptr_to(p, 20, 1 + shift + ARG_SLOT["b"], k)
    _call(p, child, far)
    _after_child(p, child_top, lay.get("h_top"), "H")
    vp = VProgram()
    set_pointers(vp, origin=origin, X=Loc("a"), Y=Loc("a", k), Z=Loc("frame", lay["da"]))
    mask = emit_sub_absdiff(vp, k, "A")
    if mul:
        set_pointers(vp, origin=origin, X=Loc("b"), Y=Loc("b", k), Z=Loc("frame", lay["db"]))
        mask_b = emit_sub_absdiff(vp, k, "B")
        vp.eor(mask, mask_b, comment="t = sign(A_l - A_h) xor sign(B_l - B_h)")
        set_pointers(vp, origin=origin, Z=Loc("frame", lay["t"]))
        vp.st(Mem("Z"), mask, comment="t, just below M")
    _run(p, vp, ABSDIFF_POOL)
    p.comment(f"=== M = |A_l - A_h|{' * |B_l - B_h|' if mul else '^2'} into the frame ===")
    read_sp(p, 30, comment="SP: the frame is above it")
    _frame_ptr(p, 24, lay["m"])
    _frame_ptr(p, 22, lay["da"])
    if mul:
        _frame_ptr(p, 20, lay["db"])
    _call(p, child, far)
    if child_top:
        p.push(24, comment="M's (d, f), for the combination")
        p.push(25)
        # in reverse of _folded's order: L's last, so the combination pops it first
        for q, child_name in enumerate(reversed(folded)):
            slot = lay[f"{child_name.lower()}_top"] + 2 * (q + 1)
            _frame_pair(p, slot, store=False, comment=f"{child_name}'s (d, f), pushed after M's")
            p.push(24)
            p.push(25)
        pushed = 2 + 2 * len(folded)  # SP has moved down: the frame is further above it
        origin += pushed
        lay = {name: off + pushed for name, off in lay.items()}
    shift = frame_reader(p, 30, origin)
    r_slot = 1 + shift + ARG_SLOT["r"]
    p.ldd(24, Mem("Z", disp=r_slot), comment="r, for the combination's pointers")
    p.ldd(25, Mem("Z", disp=r_slot + 1))
    _frame_ptr(p, 26, (lay["t"] if mul else lay["m"]) - origin + shift)
    for lo, off in ((28, k), (30, 2 * k)):  # Y = r + k, Z = r + 2k: from r, not reloaded
        p.movw(lo, 24)
        add_const(p, lo, off)
    _run(p, level_combine(k, mul, m_deferred=bool(child_top), h_deferred="H" in folded,
                          l_deferred="L" in folded, defer=not alloc, branched=branched))
    if alloc:
        p.phase("release the frames")
        move_sp(p, 28, alloc)
    p.ret()


@memo_search
def leaf_kernel(op: str, nbytes: int, variant: str, origin: int, choices: Choices) -> Kernel:
    """The fixed-size routine under the levels.  Its full frame, if it has one, is reserved by
    the top level, `origin` bytes above the leaf's SP+1 (Kernel.caller_frame)."""
    if op == "mul":
        return karatsuba_mul(nbytes, variant, choices=choices, origin=origin)
    return fixed_square(nbytes, choices, origin=origin, defer_top=True)


def level_options(n: int, op: str = "mul") -> list[int]:
    """Memory levels that halve n down to a leaf the fixed-size routines support."""
    leaf_ok = fixed_mul_levels if op == "mul" else structures
    out = []
    for levels in range(1, 8):
        if n % (1 << levels):
            break
        leaf = n >> levels
        if leaf < 8:
            break
        if leaf <= LEAF_MAX and leaf_ok(leaf):
            out.append(levels)
    return out


@memo_search
def build(n: int, op: str, levels: int, variant: str, ret_bytes: int,
          choices: Choices) -> Kernel:
    """n-byte operands by `levels` memory levels over the fixed-size leaf; CALL/JMP (far) when
    the code is too large for RCALL/RJMP to reach.  ret_bytes: a return address's size on the
    stack (the frames lie that much further above each callee's SP)."""
    leaf = n >> levels
    # One frame for the whole call chain, reserved by the top level: from SP+1 up, the leaf's,
    # then each level's from the deepest up.  A routine i calls deep sees it i return addresses
    # further above its own SP+1.
    kern = choices.choose(
        "leaf", [8 * leaf],
        lambda _, c: leaf_kernel(op, leaf, variant, ret_bytes * levels, choices=c),
        cost=lambda _: 0)
    far = choices.decide(
        "far", lambda: _emit_levels(n, op, levels, kern, True, ret_bytes,
                                    variant == "branched").body.size > 3800)
    return _emit_levels(n, op, levels, kern, far, ret_bytes, variant == "branched")


def _emit_levels(n: int, op: str, levels: int, kern: Kernel, far: bool,
                 ret_bytes: int, branched: bool) -> Kernel:
    """The routine: a call of the top level, then each level's subroutine and the leaf's."""
    leaf = n >> levels
    child_tops = [(n >> (i + 1)) // 2 for i in range(levels - 1)]
    child_tops.append(kern.top_deferred)
    origins, below = [0] * levels, kern.caller_frame
    for i in reversed(range(levels)):
        origins[i] = ret_bytes * i + below
        below += _layout(n >> i, op, _folded(i == 0, child_tops[i]))["size"]
    p = Program(label_prefix="kl_")  # the levels' signed arms, apart from the leaf's
    label = {m: f"kl_{op}{8 * m}" for m in (n >> i for i in range(levels + 1))}
    _call(p, label[n], far)
    (p.jmp if far else p.rjmp)("kl_done")
    for i in range(levels):
        m = n >> i
        p.label(label[m])
        emit_level(p, m, op, label[m // 2], far, origins[i], alloc=below if i == 0 else 0,
                   child_top=child_tops[i], branched=branched)
    p.label(label[leaf])
    p.comment(f"=== leaf: {8 * leaf}-bit fixed-size Karatsuba {op} ===")
    move_arguments(p, kern.args)
    p.extend(kern.body)
    p.ret()
    p.label("kl_done")
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
    options = level_options(n, op)
    if not options:
        raise AvrmpError(
            f"--bits {8 * n}: large Karatsuba needs a size that halves evenly down to a "
            f"64..256-bit leaf (for example 384, 512, 768, 1024, 1536, 2048 bits)"
        )
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
        return bool(level_options(m)) if is_large(m) else bool(fixed_mul_levels(m))

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
    if is_large(n) or not structures(n):
        return large_kernel(n, "sqr", variant, choices, levels, ret_bytes)
    return fixed_square(n, choices, levels)


LEAF_STACK = 128  # bound on a fixed-size leaf's frame (the 256-bit multiplication leaf: 112)


def stack_estimate(op: str, n: int, levels: int | None = None, ret_bytes: int = 2) -> int:
    """Upper bound on the stack bytes a Karatsuba routine for n-byte operands uses below its
    return address (for deciding whether an MCU's SRAM holds it); 0 for the fixed sizes, whose
    frames are small."""
    if op not in ("mul", "sqr") or not is_large(n):
        return 0
    options = level_options(n, op)
    if not options:  # runs on zero-padded copies (see karatsuba_mul_any): a rough upper bound
        return 8 * n + LEAF_STACK
    levels = max(options) if levels is None else levels
    frames = sum(_layout(n >> i, op, _folded(True, 1))["size"] for i in range(levels))
    return frames + ret_bytes * (levels + 1) + LEAF_STACK
