"""Karatsuba squaring for fixed sizes (multiplication's structure, one operand).

With k = ceil(m/2) and A = A_l + 2^8k A_h:

    L = A_l^2,  H = A_h^2,  M = |A_l - A_h|^2  (always subtracted: (A_l - A_h)^2 >= 0)
    A^2 = L_0 + 2^8k U + 2^24k Hbar_hi,   Hbar = H + L_1,   U = (L_0 | Hbar_lo) + Hbar - M

so squaring needs no t, no conditional negation of M and only one absolute difference (whose sign
is thrown away).  Every block is straight-line code: branch-free by construction.

* The **base** is one Karatsuba level in (virtual) registers, each of its three half-size squares
  by product-scanning squaring (`blocks.emit_square`: each cross product once, doubled); for small
  sizes a plain in-register square (no Karatsuba level) may be faster, and the cost model picks.
  A comes through Y (LDD), the result goes out through Z (STD); X is not used.
* A **memory level** splits an even n into an L child, an H child that adds L_1 into its square
  (Hbar, fused when the child is a base) and an M child that squares |A_l - A_h|.  When the M child
  is a base it computes the difference in registers and finishes the parent's combination itself;
  otherwise the difference and M go to the stack frame and a memory pass combines.
* Sizes of 48 bytes and more (384 bits up) are built by `karatsuba_large` from the fixed sizes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from .blocks import emit_abs_diff, emit_ripple_mem, emit_square, move_pointer
from .errors import AvrmpError
from .karatsuba import (
    ARG_SLOT,
    BASE_POOL,
    SCRATCH,
    SCRATCH_OFF,
    Frame,
    Loc,
    _add_const,
    _free_y,
    _load_y,
    _load_z,
    _set_sp_atomic,
    _store_z,
    _z_slots,
    emit_low_half,
    emit_ripple,
    emit_u,
    emit_zero,
    frame_reader,
    set_pointers,
)
from .kernel import Kernel
from .program import Mem, Program
from .spec import Spec
from .vreg import AllocationError, V, VProgram, allocate

MAX_SQR_BASE = 20  # the largest one-level base (bytes) tried; beyond it the allocation runs dry
PLAIN_MAX = 24  # the largest size tried as a plain in-register square (no Karatsuba level)


def emit_sqr_base(
    p: VProgram,
    m: int,
    src_off: int = 0,
    out_off: int = 0,
    addend_off: int | None = None,
    parent: bool = False,
    absdiff: bool = False,
    scratch: int = 0,
    plain: bool = False,
    w: int = 2,
    pair_zero: bool = False,
    keep_y: bool = False,
    scratch_off: int | None = None,
    defer_top: bool = False,
) -> None:
    """A square in registers for m-byte operands, A through Y from src_off.

    plain: no Karatsuba level (one product-scanning square).  absdiff: the operand is
    |A[0..m) - A[m..2m)| (the parent's M).  addend_off: add the m bytes at Z+addend_off (the parent's
    L_1, refined Karatsuba); the result is stored at Z+out_off.  parent: finish the parent's
    combination instead of storing (this is the parent's M; the parent's k is m, R at Z+0).
    w, pair_zero: emit_square's chunk width, and a zero register pair (MOVW clears two
    accumulator tops at once) instead of a single zero register.  keep_y: Y stays on the operand
    (evicted operand bytes reload through it) instead of being lent or released.  scratch_off:
    where the frame's scratch starts above SP+1 (see karatsuba._free_y).  defer_top: a parent
    leaves its top bytes to its caller (SqrCombine)."""
    p.release(26, 27)  # X is not used: one operand comes through Y
    free_y = (lambda: None) if keep_y else (lambda: _free_y(p, scratch, scratch_off))
    zero, zero_hi = emit_zero(p, pair_zero)

    def square(x, addend=(), sink=None):
        return emit_square(p, x, zero, addend=addend, zero_hi=zero_hi, w=w, sink=sink)

    def store_now(i: int, reg: V) -> None:
        """A result byte goes out as soon as it is final."""
        _store_z(p, out_off + i, [reg], "r")

    p.phase(f"operand ({m} bytes)")
    if absdiff:
        a_all = _load_y(p, src_off, range(m), "a")
        emit_abs_diff(p, a_all, lambda i: _load_y(p, src_off + m, range(i, i + 1), "a'")[0], zero)
        free_y()
    if plain:
        a = a_all if absdiff else _load_y(p, src_off, range(m), "a")
        if not absdiff:
            free_y()
        e = _LazyZ(p, addend_off, m, "e") if addend_off is not None else ()
        p.phase(f"A^2 ({m} bytes, product-scanning squaring)")
        if parent:  # the combination runs as M's bytes are final
            p.comment("the parent's combination is interleaved, chunk by chunk")
            combine = SqrCombine(p, m, zero, defer=defer_top)
            square(a, e, sink=lambda i, r: combine.push(r))
        else:
            square(a, e, sink=store_now)
        return
    k = (m + 1) // 2
    h = m - k
    a_lo = a_all[:k] if absdiff else _load_y(p, src_off, range(k), "a")
    p.phase(f"L = A_l^2 ({k} bytes)")
    L = square(a_lo)
    assert len(L) == 2 * k
    carry_e = emit_low_half(p, L[:k], addend_off, out_off, not parent, zero)
    a_hi = a_all[k:] if absdiff else _load_y(p, src_off, range(k, m), "a")
    p.phase(f"Hbar = A_h^2 + L_1 ({h} bytes)")
    Hb = square(a_hi, L[k:])
    p.phase("|A_l - A_h| (its sign is not needed)")
    emit_abs_diff(p, a_lo, a_hi, zero)
    if not absdiff:  # only now: until here evicted operand bytes reload through Y
        free_y()
    p.phase(f"M = |A_l - A_h|^2 ({k} bytes)")
    M = square(a_lo)
    u, d = emit_u(p, L, Hb, m, carry_e, addend_off, parent, zero)
    p.phase("U -= M; merge carry and borrow into (d, f)")
    for i, ui in enumerate(u):
        p.emit("sub" if i == 0 else "sbc", ui, M[i] if i < len(M) else zero)
    f = p.v("f")
    p.sbc(d, zero)
    p.sbc(f, f)
    top = Hb[k : 2 * h]
    if top:
        p.phase("top bytes: Hbar_hi + (d, f)")
        emit_ripple(p, top, d, f)
    product = L[:k] + u + top
    if not parent:
        _store_z(p, out_off + k, u + top, "r")
        return
    combine = SqrCombine(p, m, zero, defer=defer_top)
    for v in product:
        combine.push(v)


def emit_top_deferred(p: VProgram, d: V, f: V, ptr: int, off: int) -> None:
    """Leave the top bytes of a square to the caller (karatsuba_large.emit_level ripples or folds
    them): (d, f) to r24:r25, through r0:r1, which no allocation pool holds, so the moves cannot
    clobber each other; Z to the top bytes at r[ptr+1]:r[ptr] + off."""
    p.mov(0, d)
    p.mov(1, f)
    p.movw(24, 0, comment="(d, f) for the caller")
    if ptr != 30:
        p.movw(30, ptr)
    if off:
        p.adiw(30, off, comment="Z = the top bytes, not yet rippled")


class _LazyZ(Sequence):
    """count bytes at Z+off, each loaded when first indexed (so an addend's bytes are loaded just
    before emit_square adds them, not all at the start)."""

    def __init__(self, p: VProgram, off: int, count: int, name: str) -> None:
        self.p, self.off, self.count, self.name = p, off, count, name
        self.regs: dict[int, V] = {}

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        if not 0 <= i < self.count:
            raise IndexError(i)
        if i not in self.regs:
            self.regs[i] = _load_z(self.p, self.off + i, 1, self.name)[0]
        return self.regs[i]


class SqrCombine:
    """A parent's combination for squaring, R through Z (displacements up to 4k - 1): L_0 at
    R[0..k), Hbar at R[2k..4k).  U = (L_0 | Hbar_lo) + Hbar - M goes to R[k..3k), Hbar_hi + (d, f)
    to R[3k..4k).  M's bytes are pushed in order, so the combination can run chunk by chunk (w
    bytes) while M is still being computed, and no byte of M waits in a register.  Two carry
    chains per chunk, both carries parked in one register: the addition's in bit 0 (LSR restores,
    ROL saves), the subtraction's in bit 7 (LSL restores, ROR saves).

    defer: the routine is a subroutine of a large squaring, whose caller finishes the top bytes
    (emit_top_deferred): they are left as Hbar_hi, (d, f) returned in r24:r25 and Z at R+3k."""

    def __init__(self, p: VProgram, k: int, zero: V, w: int = 4, defer: bool = False) -> None:
        self.p, self.k, self.zero, self.w, self.defer = p, k, zero, w, defer
        self.cc = p.v("cc")
        p.clr(self.cc)
        self.j = 0  # U's next byte
        self.ms: list[V] = []  # M's bytes pushed but not yet combined

    def push(self, m: V) -> None:
        self.ms.append(m)
        if len(self.ms) == self.w or self.j + len(self.ms) == 2 * self.k:
            self._chunk()

    def _chunk(self) -> None:
        p, k, j, cc = self.p, self.k, self.j, self.cc
        idx = range(j, j + len(self.ms))
        last = idx[-1] == 2 * k - 1
        p.comment(f"combine: U[{j}..{idx[-1]}] = (L_0 | Hbar_lo) + Hbar - M")
        u = [_load_z(p, i if i < k else k + i, 1, "x")[0] for i in idx]
        if j:
            p.lsr(cc, comment="C = the addition's carry (bit 0)")
        for n, i in enumerate(idx):
            y = _load_z(p, 2 * k + i, 1, "hb")[0]
            p.emit("adc" if j or n else "add", u[n], y)
        p.rol(cc, comment="park it")
        p.lsl(cc, comment="C = the subtraction's borrow (bit 7)")
        for n, m in enumerate(self.ms):
            p.emit("sbc" if j or n else "sub", u[n], m)
        if not last:
            p.ror(cc, comment="park it")
        _store_z(p, k + j, u, "r")
        self.j, self.ms = idx[-1] + 1, []
        if last:
            self._top()

    def _top(self) -> None:
        """C = U's last borrow, cc = its last carry << 1: (d, f) = carry - borrow, sign-extended,
        rippled into Hbar_hi."""
        p, k, d = self.p, self.k, self.cc
        p.phase("top bytes: Hbar_hi + (d, f)")
        f = p.v("f")
        p.sbc(f, f, comment="f = -borrow")
        p.lsr(d, comment="d = carry")
        p.add(d, f, comment="(d, f) = carry - borrow")
        p.adc(f, self.zero)
        if self.defer:
            emit_top_deferred(p, d, f, 30, 3 * k)
            return
        top = _load_z(p, 3 * k, k, "hb")
        emit_ripple(p, top, d, f)
        _store_z(p, 3 * k, top, "r")


SQUARE_WIDTHS = (2, 4, 6)  # emit_square chunk widths tried per base


def _run(p: Program, spill, ptrs: dict | None = None, follow: bool = False, **kw) -> None:
    """A base block, with Y lent for spills into the frame's scratch, released into the register
    pool or kept on the operand, with each chunk width of the squares and a single or paired zero
    register, whichever allocation is cheapest.  ptrs (see _point) learns whether Y survives
    (kept on the operand, it needs no reload from the frame for a following base: `follow`
    charges the others that reload; without a frame, Y is kept unless this is the last base)."""
    scratch = kw.pop("scratch", 0)
    frameless = ptrs is not None and ptrs.get("frameless")
    if frameless:  # Y released into the pool only by the last base: no pointer can be reloaded
        y_roles = [(0, True)] + ([] if follow else [(0, False)])
    else:
        y_roles = [(s, False) for s in sorted({scratch, 0})] + [(0, True)]
    best = None
    for (s, keep_y), w, pair_zero in itertools.product(y_roles, SQUARE_WIDTHS, (False, True)):
        vp = VProgram()
        emit_sqr_base(vp, scratch=s, keep_y=keep_y, w=w, pair_zero=pair_zero, **kw)
        trial = Program()
        try:
            allocate(vp, BASE_POOL, trial, spill_slots=spill, labels_from=p)
        except AllocationError:
            continue
        cost = trial.static_cycles() + (RELOAD_Y if follow and not keep_y else 0)
        if best is None or cost < best[0]:
            best = (cost, trial, keep_y)
    if best is None:
        raise AllocationError(f"no register allocation for the {kw['m']}-byte squaring base")
    p.extend(best[1])
    if ptrs is not None and not best[2]:
        ptrs.pop("Y", None)


RELOAD_Y = 15  # re-pointing Y through the frame (IN, IN, LDD, LDD, MOV) plus saving the pointers


def _point(p: Program, ptrs: dict, **locs: Loc) -> None:
    """Point Y/Z at locs: by ADIW/SBIW from where ptrs says they point, else through the frame's
    saved entry pointers (ptrs["reloads"] counts those).  ptrs is updated."""
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
        ptrs["reloads"] = ptrs.get("reloads", 0) + 1
        if set(reload) == {"Y"} and reload["Y"].base != "frame":
            loc = reload["Y"]  # Z stays: read the saved pointer through Y itself
            shift = frame_reader(p, 28, ptrs.get("origin", 0))
            p.ldd(0, Mem("Y", disp=1 + shift + ARG_SLOT[loc.base]))
            p.ldd(29, Mem("Y", disp=2 + shift + ARG_SLOT[loc.base]))
            p.mov(28, 0)
            _add_const(p, 28, loc.off)
        else:
            set_pointers(p, origin=ptrs.get("origin", 0), **reload)
    ptrs.update(locs)


# --- memory levels (sizes up to 32 bytes: every displacement stays within 0..63) -------------------


def emit_sqr_node(p: Program, n: int, levels: int, plain: bool, a: Loc, out: Loc,
                  frame: Frame, ptrs: dict, defer_top: bool = False) -> None:
    """out[0..2n) = a[0..n)^2 with `levels` levels (1 = a base in registers).  ptrs: where Y and
    Z are known to point (see _point).  defer_top: leave the top bytes to the caller
    (SqrCombine)."""
    k = n // 2
    scratch = 0 if ptrs.get("frameless") else SCRATCH
    spill = {"scratch": scratch, "scratch_off": frame.origin + SCRATCH_OFF}
    if levels == 1:
        _point(p, ptrs, Y=a, Z=out)
        _run(p, _z_slots((n + 1) // 2, 2 * n), ptrs, True, m=n, plain=plain, **spill)
        return
    p.comment(f"=== {8 * n}-bit squaring level ({levels} levels): L = A_l^2 ===")
    emit_sqr_node(p, k, levels - 1, plain, a, out, frame, ptrs)
    p.comment(f"=== {8 * n}-bit level: Hbar = A_h^2 + L_1 ===")
    if levels == 2:
        _point(p, ptrs, Y=a + k, Z=out + k)
        _run(p, _z_slots(k + (k + 1) // 2, 3 * k), ptrs, True, m=k, out_off=k, addend_off=0,
             plain=plain, **spill)
    else:
        from .karatsuba import emit_mem_add_l1

        emit_sqr_node(p, k, levels - 1, plain, a + k, out + 2 * k, frame, ptrs)
        _point(p, ptrs, Z=out + k)
        vp = VProgram()
        emit_mem_add_l1(vp, k)
        allocate(vp, BASE_POOL, p)
        ptrs.clear()  # the pass may move its pointers
    p.comment(f"=== {8 * n}-bit level: M = |A_l - A_h|^2, combine ===")
    if levels == 2:
        _point(p, ptrs, Y=a, Z=out)
        _run(p, _z_slots(k, 2 * k), ptrs, m=k, absdiff=True, parent=True, plain=plain,
             defer_top=defer_top, **spill)
        return
    diff = frame.alloc(k)
    set_pointers(p, origin=frame.origin, Y=a, Z=diff)
    vp = VProgram()
    zero = vp.v("zero")
    vp.clr(zero)
    vp.phase(f"|A_l - A_h| ({k} bytes) into the frame")
    x = _load_y(vp, 0, range(k), "a")
    emit_abs_diff(vp, x, lambda i: _load_y(vp, k, range(i, i + 1), "a'")[0], zero)
    _store_z(vp, 0, x, "d")
    allocate(vp, BASE_POOL, p)
    ptrs.clear()
    prod = frame.alloc(2 * k)
    emit_sqr_node(p, k, levels - 1, plain, diff, prod, frame, ptrs)
    set_pointers(p, origin=frame.origin, Y=prod, Z=out)
    vp = VProgram()
    zero = vp.v("zero")
    vp.clr(zero)
    combine = SqrCombine(vp, k, zero, defer=defer_top)
    for i in range(2 * k):
        combine.push(_load_y(vp, i, range(1), "m")[0])
    allocate(vp, BASE_POOL, p)
    ptrs.clear()
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


def build_fixed(n: int, levels: int, plain: bool, origin: int | None = None,
                defer_top: bool = False) -> Kernel:
    """The n-byte squaring with this structure.  As a subroutine of a large routine: origin, the
    caller reserves the frame, `origin` bytes above the callee's SP+1 (Kernel.caller_frame says
    how many bytes), so the routine moves no SP; defer_top, the caller finishes the top bytes
    (Kernel.top_deferred)."""
    p = Program()
    if levels == 1:
        _run(p, _z_slots((n + 1) // 2, 2 * n), m=n, plain=plain)
        return Kernel(p, {"a": 28, "r": 30}, [_note(n, levels, plain)])
    options = [_framed(n, levels, plain, origin, defer_top)]
    if levels == 2:  # Y kept on the operand by every base: no pointer to save, no spill frame
        try:
            options.append(_frameless(n, plain, defer_top))
        except AllocationError:
            pass
    return min(options, key=lambda kern: kern.body.static_cycles())


def plain_square(n: int) -> Kernel:
    """The n-byte square as one register-allocated product-scanning block (no Karatsuba level)."""
    p = Program()
    _run(p, _z_slots((n + 1) // 2, 2 * n), m=n, plain=True)
    return Kernel(p, {"a": 28, "r": 30}, ["product-scanning square in registers (emit_square)"])


def _frameless(n: int, plain: bool, defer_top: bool = False) -> Kernel:
    p = Program()
    ptrs = {"frameless": True, "Y": Loc("a"), "Z": Loc("r")}
    emit_sqr_node(p, n, 2, plain, Loc("a"), Loc("r"), Frame(), ptrs, defer_top)
    return Kernel(p, {"a": 28, "r": 30}, [_note(n, 2, plain) + ", no stack frame"],
                  top_deferred=n // 2 if defer_top else 0)


def _framed(n: int, levels: int, plain: bool, origin: int | None = None,
            defer_top: bool = False) -> Kernel:
    frame = Frame(origin or 0)
    body = Program()
    # Y and Z are set from the argument registers with the frame.
    ptrs = {"Y": Loc("a"), "Z": Loc("r"), "origin": frame.origin}
    emit_sqr_node(body, n, levels, plain, Loc("a"), Loc("r"), frame, ptrs, defer_top)
    size = frame.size - frame.origin
    p = Program()
    saves = [(name, lo) for name, lo in (("r", 24), ("a", 22)) if ptrs.get("reloads")]
    if origin is None:
        p.phase(f"stack frame: entry pointers and {size - 6} bytes of temporaries")
        p.in_(28, 0x3D)
        p.in_(29, 0x3E)
        _add_const(p, 28, (-size) & 0xFFFF) if size > 63 else p.sbiw(28, size)
        _set_sp_atomic(p)
        shift = 0
    elif saves:
        p.phase(f"the caller's frame: entry pointers and {size - 6} bytes of temporaries")
        shift = frame_reader(p, 28, frame.origin)
    for name, lo in saves:
        p.std(Mem("Y", disp=1 + shift + ARG_SLOT[name]), lo, comment=f"save pointer {name}")
        p.std(Mem("Y", disp=2 + shift + ARG_SLOT[name]), lo + 1)
    p.movw(28, 22, comment="Y = a")
    p.movw(30, 24, comment="Z = r")
    p.extend(body)
    note = _note(n, levels, plain) + f", frame {size} bytes"
    if origin is not None:
        return Kernel(p, {}, [note + " (reserved by the caller)"], caller_frame=size,
                      top_deferred=n // 2 if defer_top else 0)
    p.phase("release the stack frame")
    p.in_(28, 0x3D)
    p.in_(29, 0x3E)
    _add_const(p, 28, size)
    _set_sp_atomic(p)
    return Kernel(p, {}, [note])


def _note(n: int, levels: int, plain: bool) -> str:
    base = n >> (levels - 1)
    kind = "plain product-scanning square" if plain else "1 Karatsuba level in registers"
    mem = f"{levels - 1} memory level{'s' if levels > 2 else ''} over " if levels > 1 else ""
    return f"Karatsuba squaring: {mem}base {base} bytes ({kind})"


def _cost(n: int, opt: tuple[int, bool]) -> float:
    try:
        return build_fixed(n, *opt).body.static_cycles()
    except AllocationError:
        return float("inf")  # this base does not fit the registers and lent scratch


def best_fixed(n: int, levels: int | None = None) -> tuple[int, bool]:
    opts = [o for o in structures(n) if levels is None or o[0] == levels]
    costs = {o: _cost(n, o) for o in opts}
    if not costs or min(costs.values()) == float("inf"):
        raise AvrmpError(
            f"{8 * n}-bit Karatsuba squaring: no structure fits this size"
            + (f" with --levels {levels}" if levels is not None else "")
        )
    return min(costs, key=costs.__getitem__)


def karatsuba_sqr(spec: Spec) -> Kernel:
    if spec.variant == "branched":
        raise AvrmpError(
            "--variant branched: Karatsuba squaring has no sign to branch on; "
            "use --variant branchfree"
        )
    n = spec.operand_bytes
    from . import karatsuba_large

    if karatsuba_large.is_large(n) or not structures(n):
        return karatsuba_large.large_kernel(spec)
    return build_fixed(n, *best_fixed(n, spec.levels))
