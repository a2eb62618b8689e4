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

    r, a, b (6)    t (1, multiplication)    |A_l - A_h| (k), |B_l - B_h| (k), M (2k)

and runs, for k = n/2:  L = call(r, a, b);  H = call(r+2k, a+k, b+k);  the absolute differences
and t;  M = call(frame);  then the combination (level_combine), with Hbar = H + L_1 fused in:
U = (L_0 | Hbar_lo) + Hbar -/+ M into r[k..3k) and H_hi + carries into r[3k..4k), streaming the
bytes through X/Y/Z in chunks with the carries parked in registers.  Squaring always subtracts M.
A level below the top leaves its top bytes to its caller (karatsuba_sqr.emit_top_deferred).
"""

from __future__ import annotations

from functools import cache

from .abi import _argument_moves
from .blocks import emit_cond_negate, emit_ripple_mem
from .errors import AvrmpError
from .karatsuba import _add_const, _set_sp_atomic
from .karatsuba_sqr import emit_top_deferred
from .kernel import Kernel
from .program import Label, Mem, Program
from .spec import Spec
from .vreg import VProgram, allocate

LEAF_MAX = 32  # fixed-size routines exist up to 32 bytes (256 bits)
POOL = [*range(2, 24)]  # r24:r25 and r0:r1 hold parked pointers in the memory passes
ABSDIFF_POOL = [*range(0, 26)]  # no pointer is parked while the differences are formed
FRAME_PTRS = 6


def is_large(n: int) -> bool:
    return n > LEAF_MAX


class CallProgram(Program):
    """A Program with local subroutines: the cost model follows CALL/RCALL, RET and JMP/RJMP (all
    unconditional), so the static cycle count is still exact."""

    def static_cycles(self, core: str = "avre+") -> int | None:
        items = self.items
        where = {it.name: i for i, it in enumerate(items) if isinstance(it, Label)}
        memo: dict[int, int | None] = {}

        def run(start: int, depth: int) -> int | None:
            if start in memo:
                return memo[start]
            total, i = 0, start
            while i < len(items):
                it = items[i]
                i += 1
                if isinstance(it, Label) or not hasattr(it, "mnemonic"):
                    continue
                c = it.cycles(core)
                if c is None or depth > 20:
                    return None
                total += c
                m = it.mnemonic
                if m in ("call", "rcall"):
                    sub = run(where[it.operands[0]], depth + 1)
                    if sub is None:
                        return None
                    total += sub
                elif m in ("jmp", "rjmp"):
                    i = where[it.operands[0]]
                elif m == "ret":
                    break
            memo[start] = total
            return total

        return run(0, 0)


def _ptr_to(p: Program, lo: int, base_slot: int, off: int) -> None:
    """r[lo+1]:r[lo] = (pointer saved at Z+base_slot) + off, Z = SP."""
    p.ldd(lo, Mem("Z", disp=base_slot))
    p.ldd(lo + 1, Mem("Z", disp=base_slot + 1))
    _add_const(p, lo, off)


def _frame_ptr(p: Program, lo: int, off: int) -> None:
    """r[lo+1]:r[lo] = SP + 1 + off (Z must hold SP)."""
    p.movw(lo, 30)
    _add_const(p, lo, 1 + off)


def _call(p: Program, label: str, far: bool) -> None:
    (p.call if far else p.rcall)(label)


# --- memory passes (straight-line, over virtual registers) -----------------------------------------


ABSDIFF_KEPT = 23  # leading bytes of D held in registers between its two chains


def emit_sub_absdiff(p: VProgram, k: int, name: str) -> object:
    """X -> S_l, Y -> S_h, Z -> D (k bytes each).  D = S_l - S_h in one borrow chain (LD and ST
    leave the carry alone), then D = (D xor mask) - mask in a second one.  D's first
    ABSDIFF_KEPT bytes stay in registers between the chains: neither stored nor reloaded.  Z ends
    at D + k.  Returns the mask V (0xFF when S_l < S_h)."""
    keep = min(ABSDIFF_KEPT, k)
    p.phase(f"D = {name}_l - {name}_h ({k} bytes, the first {keep} kept in registers)")
    _add_const(p, 30, keep)  # Z -> D + keep, where the stored bytes start
    kept = []
    for col in range(k):
        x, y = p.v("x"), p.v("y")
        p.ld(x, Mem("X", "+"), comment=f"{name}[{col}]")
        p.ld(y, Mem("Y", "+"), comment=f"{name}[{k + col}]")
        p.emit("sbc" if col else "sub", x, y)
        if col < keep:
            kept.append(x)
        else:
            p.st(Mem("Z", "+"), x)
    mask = p.v("mask")
    p.sbc(mask, mask, comment="mask = 0xFF when the subtraction borrowed")
    _add_const(p, 30, -k)
    p.phase(f"D = (D xor mask) - mask ({k} bytes)")
    for col in range(k):
        if col < keep:
            x = kept[col]
        else:
            x = p.v("d")
            p.ld(x, Mem("Z"))
        p.eor(x, mask)
        p.emit("sbc" if col else "sub", x, mask)
        p.st(Mem("Z", "+"), x)
    return mask


def level_combine(k: int, signed: bool, w: int = 8, w_high: int | None = None,
                  m_deferred: bool = False, defer: bool = False) -> VProgram:
    """A memory level's combination with Hbar = H + L_1 fused in (no separate Hbar pass): R holds
    L at R[0..2k) and H at R[2k..4k), the frame M (2k bytes).  Two passes over k bytes, in chunks
    of w (low half) and w_high (the high half keeps fewer bytes live, so its chunks can be wider
    and park the carries of the three chains (Hbar, U's addition, M) less often; by default 16,
    14 when t takes a register), then the top bytes:

      low:  Hbar_lo = H_lo + L_1 (to R[2k..3k)),  U_lo = L_0 + Hbar_lo -/+ M_lo (to R[k..2k))
      high: U_hi = Hbar_lo + H_hi + c -/+ M_hi (to R[2k..3k)), c the carry of Hbar_lo, its own chain
      top:  R[3k..4k) = H_hi + (d, f), d = c + the chains' carries (and M's sign extension)

    Squaring always subtracts M.  signed (multiplication): the byte t before M says how (0xFF: add;
    M's chain adds (M xor ~t) + (~t & 1), an EOR per byte of M, which leaves the carry alone).
    m_deferred: M's top quarter (M_hi[k/2..k)) has not been rippled; the (d, f) that M's routine
    returned are on the stack (d pushed first).  M is then larger by that signed value at
    U_hi[k/2]: folded with c into one signed addend whose sign byte the Hbar chain, otherwise
    adding zero, carries on to the top.  defer: leave the top bytes to the caller
    (karatsuba_sqr.emit_top_deferred).

    On entry X points at M (signed: at t), Y at R+k, Z at R+2k and r25:r24 at R."""
    if w_high is None:
        w_high = 14 if signed else 16
    p = VProgram()
    zero = p.v("zero")
    p.clr(zero)
    carry = {name: p.v(name) for name in ("ch", "cu", "cm")}  # Hbar's, U's addition's, M's
    for c in carry.values():
        p.clr(c)
    t = None
    if signed:
        t = p.v("t")
        p.ld(t, Mem("X", "+"), comment="t")
        p.com(t, comment="t = 0xFF now means: subtract M")

    def chain(name: str, dst: list, src, first: bool, last: bool, op: str = "add") -> None:
        """dst += src (or -= with op "sub"; op "adc" adds with the carry already set; src a list,
        a function of the byte's index that loads it just before it is needed, or one register for
        every byte), the carry restored before (unless this is the chain's first chunk) and parked
        after (unless its last)."""
        if not first:
            p.lsr(carry[name], comment=f"C = {name}")
        for q, x in enumerate(dst):
            y = src[q] if isinstance(src, list) else src(q) if callable(src) else src
            p.emit(op if first and q == 0 else {"add": "adc", "sub": "sbc", "adc": "adc"}[op],
                   x, y)
        if not last:
            p.rol(carry[name], comment=f"park {name}")

    def m_chain(u: list, j: int, first: bool) -> None:
        """U -/+= M's bytes j.. (through X)."""
        if t is None:
            chain("cm", u, lazy("X", "M", j), first, False, "sub")
            return

        def m_byte(q: int):
            v = load("X", 1, "M", j + q)[0]
            p.eor(v, t)
            return v

        if first:
            p.cp(zero, t, comment="C = t: (M xor t) + t = -M when t = 0xFF")
        chain("cm", u, m_byte, first, False, "adc")

    def sign_byte(dst, src, comment: str) -> None:
        """dst = 0xFF if src (a small signed value) is negative, else 0."""
        p.mov(dst, src)
        p.lsl(dst)
        p.sbc(dst, dst, comment=comment)

    def lazy(ptr: str, name: str, first: int, at: int = 0):
        """A byte source for chain(): byte q loaded when the chain reaches it."""
        return lambda q: load(ptr, 1, name, first + q, at + q)[0]

    def load(ptr: str, n: int, name: str, first: int, disp: int = 0) -> list:
        out = [p.v(name) for _ in range(n)]
        for q, v in enumerate(out):
            if ptr == "X":
                p.ld(v, Mem("X", "+"), comment=f"{name}[{first + q}]")
            else:
                p.ldd(v, Mem(ptr, disp=disp + q), comment=f"{name}[{first + q}]")
        return out

    def store(ptr: str, vals: list, name: str, first: int, at: int = 0) -> None:
        for q, v in enumerate(vals):
            p.std(Mem(ptr, disp=at + q), v, comment=f"{name}[{first + q}]")

    # With k + w <= 64, Y reaches both L_1 (or Hbar_lo) and H at Y+k: Z streams L_0 and X stays
    # on M.  Otherwise Z walks H and X is time-shared between L_0 and M (pointers parked in
    # r25:r24 and r1:r0).
    near = k + w <= 64
    hp, h_at = ("Y", k) if near else ("Z", 0)
    if near:
        p.movw(30, 24, comment="Z -> L_0")
    else:
        p.movw(0, 26, comment="park the M pointer in r1:r0")
    p.phase(f"low half: Hbar_lo = H_lo + L_1, U_lo = L_0 + Hbar_lo -/+ M_lo ({k} bytes)")
    for j in range(0, k, w):
        n = min(w, k - j)
        if near:
            u = [p.v("L_0") for _ in range(n)]
            for q, v in enumerate(u):
                p.ld(v, Mem("Z", "+"), comment=f"L_0[{j + q}]")
        else:
            p.movw(26, 24, comment="X -> L_0")
            u = load("X", n, "L_0", j)
            p.movw(24, 26)
            p.movw(26, 0, comment="X -> M")
        hb = load(hp, n, "H", j, h_at)
        chain("ch", hb, lazy("Y", "L_1", j), j == 0, False)
        store(hp, hb, "Hbar_lo", j, h_at)
        chain("cu", u, hb, j == 0, False)
        m_chain(u, j, j == 0)
        if not near:
            p.movw(0, 26)
        store("Y", u, "U", j)
        p.adiw(28, n)
        if not near:
            p.adiw(30, n)
    p.phase(f"high half: U_hi = Hbar_lo + H_hi + carry(Hbar_lo) -/+ M_hi ({k} bytes)")
    # Hbar_hi = H_hi + Hbar_lo's carry is never formed: that carry ripples through U_hi in its own
    # chain and joins (d, f) for the top bytes, so H_hi stays in place.
    if not near:
        p.movw(26, 0, comment="X -> M (no longer shared); Y is at R+2k, Z at R+3k")
    c_hbar = p.v("c")
    p.mov(c_hbar, carry["ch"], comment="Hbar_lo's carry, for U_hi and the top bytes")
    ext = zero  # what the Hbar chain adds above its first byte
    starts = sorted(set(range(0, k, w_high)) | ({k // 2} if m_deferred else set()))
    for j, end in zip(starts, starts[1:] + [k]):
        n = end - j
        u = load("Y", n, "Hbar_lo", j)
        chain("cu", u, lazy(hp, "H", k + j, h_at), False, False)
        if m_deferred and j == k // 2:
            p.comment("M's top quarter is (d_M, f_M) short: c -/+ (d_M, f_M) joins the Hbar chain")
            f_m, d_m = p.v("fM"), p.v("dM")
            p.pop(f_m)
            p.pop(d_m)
            s = carry["ch"]
            if t is None:
                p.sub(s, d_m, comment="s = c - d_M")
            else:
                emit_cond_negate(p, [d_m], t)  # -d_M when M is subtracted
                p.add(s, d_m, comment="s = c -/+ d_M")
            ext = p.v("sign")
            sign_byte(ext, s, "its sign byte")
            p.add(u[0], s)
            for x in u[1:]:
                p.adc(x, ext)
            p.clr(s)  # CLR keeps C
            p.rol(s, comment="park ch")
        else:
            chain("ch", u, ext, False, False)
        m_chain(u, k + j, False)
        store("Y", u, "U", k + j)
        p.adiw(28, n)
        if not near and j + n < k:
            p.adiw(30, n)
    p.phase(f"top bytes: H_hi + (d, f) ({k} bytes; Y has reached R+3k)")
    d, f = carry["cu"], p.v("f")
    p.add(d, carry["ch"])
    p.add(d, c_hbar)
    if ext is zero and t is None:
        p.sub(d, carry["cm"], comment="d = Hbar_lo's carry + U's carries - borrow (-1..3)")
        p.sbc(f, f, comment="f = sign of d")
    else:
        if t is None:
            p.sub(d, carry["cm"], comment="- M's borrow")
        else:
            p.add(d, carry["cm"])
            p.add(d, t, comment="+ M's sign extension")
        if ext is not zero:
            p.add(d, ext, comment="the signed addend goes on into the top bytes")
        sign_byte(f, d, "f = sign of d (d is -2..4)")
    if defer:
        emit_top_deferred(p, d, f, 28, 0)
        return p
    emit_ripple_mem(p, "Y", k, f, first_src=d, name="H_hi")
    return p


def _ripple_child_top(p: Program, nbytes: int) -> None:
    """Finish a child's top bytes it left (karatsuba_sqr.emit_top_deferred): Z points at them,
    (d, f) in r24:r25."""
    if nbytes:
        vp = VProgram()
        emit_ripple_mem(vp, "Z", nbytes, 25, first_src=24, name="child top")
        _run(p, vp)


# --- the routine -----------------------------------------------------------------------------------


def _layout(n: int, op: str) -> dict[str, int]:
    """Frame offsets (from SP + 1) of a memory level for n bytes."""
    k = n // 2
    lay = {"da": FRAME_PTRS}
    if op == "mul":
        lay["db"] = FRAME_PTRS + k
        lay["t"] = FRAME_PTRS + 2 * k
        lay["m"] = lay["t"] + 1
    else:
        lay["m"] = FRAME_PTRS + k
    lay["size"] = lay["m"] + 2 * k
    return lay


def _run(p: Program, vp: VProgram, pool: list[int] = POOL) -> None:
    allocate(vp, pool, p)


def emit_level(p: Program, n: int, op: str, child: str, far: bool, origin: int,
               alloc: int = 0, child_top: int = 0) -> None:
    """The memory level for n bytes as a subroutine body (label already placed).  Its frame lies
    `origin` bytes above SP+1; alloc: this is the top level, which reserves that many bytes (the
    frames of the whole call chain, see build) on entry and releases them on return, and is the
    only level that finishes its own top bytes (a level below it leaves them to its caller,
    karatsuba_sqr.emit_top_deferred).  child_top: the child does that: this level ripples the
    child's top bytes after L and H and folds M's into its combination."""
    from .karatsuba import Loc, frame_reader, frame_shift, set_pointers

    k = n // 2
    lay = {name: origin + off for name, off in _layout(n, op).items()}
    mul = op == "mul"
    own = lay["size"] - origin
    below = f", under it {alloc - own} bytes for the routines it calls" if alloc else ""
    p.phase(f"{8 * n}-bit Karatsuba level: frame of {own} bytes (pointers, differences, M){below}")
    p.in_(28, 0x3D)
    p.in_(29, 0x3E)
    if alloc:
        _add_const(p, 28, -alloc)
        _set_sp_atomic(p)
    slots = frame_shift(p, 28, origin)
    names = ("r", "a", "b") if mul else ("r", "a")
    for i, (name, lo) in enumerate(zip(names, (24, 22, 20))):
        p.std(Mem("Y", disp=1 + slots + 2 * i), lo, comment=f"save pointer {name}")
        p.std(Mem("Y", disp=2 + slots + 2 * i), lo + 1)
    p.comment(f"=== L = A_l {'* B_l' if mul else '^2'} ({8 * k} bits) ===")
    _call(p, child, far)
    _ripple_child_top(p, child_top)
    p.comment(f"=== H = A_h {'* B_h' if mul else '^2'} ===")
    shift = frame_reader(p, 30, origin)
    _ptr_to(p, 24, 1 + shift, 2 * k)
    _ptr_to(p, 22, 3 + shift, k)
    if mul:
        _ptr_to(p, 20, 5 + shift, k)
    _call(p, child, far)
    _ripple_child_top(p, child_top)
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
    shift = frame_reader(p, 30, origin)
    _frame_ptr(p, 24, lay["m"] - origin + shift)
    _frame_ptr(p, 22, lay["da"] - origin + shift)
    if mul:
        _frame_ptr(p, 20, lay["db"] - origin + shift)
    _call(p, child, far)
    if child_top:
        p.push(24, comment="M's (d, f), for the combination")
        p.push(25)
        origin += 2  # SP has moved down by the two bytes: the frame is further above it
        lay = {name: off + 2 for name, off in lay.items()}
    shift = frame_reader(p, 30, origin)
    p.ldd(24, Mem("Z", disp=1 + shift))
    p.ldd(25, Mem("Z", disp=2 + shift))
    set_pointers(p, origin=origin, X=Loc("frame", lay["t"] if mul else lay["m"]),
                 Y=Loc("r", k), Z=Loc("r", 2 * k))
    _run(p, level_combine(k, mul, m_deferred=bool(child_top), defer=not alloc))
    if alloc:
        p.phase("release the frames")
        p.in_(28, 0x3D)
        p.in_(29, 0x3E)
        _add_const(p, 28, alloc)
        _set_sp_atomic(p)
    p.ret()


@cache
def leaf_kernel(op: str, nbytes: int, variant: str, origin: int = 0) -> Kernel:
    """The fixed-size routine under the levels.  A squaring leaf's frame is reserved by the top
    level, `origin` bytes above the leaf's SP+1 (Kernel.caller_frame); a multiplication leaf
    allocates its own."""
    if op == "mul":
        from .karatsuba import karatsuba_mul

        return karatsuba_mul(Spec("mul", 8 * nbytes, "karatsuba", variant=variant))
    from .karatsuba_sqr import best_fixed, build_fixed

    return build_fixed(nbytes, *best_fixed(nbytes), origin=origin, defer_top=True)


def level_options(n: int, op: str = "mul") -> list[int]:
    """Memory levels that halve n down to a leaf the fixed-size routines support."""
    from .karatsuba import _level_options
    from .karatsuba_sqr import structures

    leaf_ok = _level_options if op == "mul" else structures
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


def build(n: int, op: str, levels: int, variant: str, far: bool | None = None) -> Kernel:
    leaf = n >> levels
    # One frame for the whole call chain, reserved by the top level: from SP+1 up, the leaf's,
    # then each level's from the deepest up.  A routine i calls deep sees it 2i bytes (return
    # addresses) further above its own SP+1.
    kern = leaf_kernel(op, leaf, variant, origin=2 * levels)
    child_tops = [(n >> (i + 1)) // 2 for i in range(levels - 1)]
    child_tops.append(kern.top_deferred)
    origins, below = [0] * levels, kern.caller_frame
    for i in reversed(range(levels)):
        origins[i] = 2 * i + below
        below += _layout(n >> i, op)["size"]
    if far is None:
        trial = build(n, op, levels, variant, far=True)
        far = trial.body.size > 3800
        if far:
            return trial
    p = CallProgram()
    label = {m: f"kl_{op}{8 * m}" for m in (n >> i for i in range(levels + 1))}
    _call(p, label[n], far)
    (p.jmp if far else p.rjmp)("kl_done")
    for i in range(levels):
        m = n >> i
        p.label(label[m])
        emit_level(p, m, op, label[m // 2], far, origins[i], alloc=below if i == 0 else 0,
                   child_top=child_tops[i])
    p.label(label[leaf])
    p.comment(f"=== leaf: {8 * leaf}-bit fixed-size Karatsuba {op} ===")
    _argument_moves(p, kern.args)
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


def large_kernel(spec: Spec) -> Kernel:
    n = spec.operand_bytes
    options = level_options(n, spec.op)
    if not options:
        raise AvrmpError(
            f"--bits {spec.bits}: large Karatsuba needs a size that halves evenly down to a "
            f"64..256-bit leaf (for example 384, 512, 768, 1024, 1536, 2048 bits)"
        )
    if spec.levels is not None:
        if spec.levels not in options:
            raise AvrmpError(
                f"--levels {spec.levels}: above 256 bits --levels counts the memory levels (called "
                f"subroutines) over the fixed-size leaf; {spec.bits} bits allows "
                f"{', '.join(map(str, options))}"
            )
        return build(n, spec.op, spec.levels, spec.variant)
    op = spec.op
    best = min(options, key=lambda lv: build(n, op, lv, "branchfree").body.static_cycles())
    return build(n, op, best, spec.variant)


def karatsuba_mul_any(spec: Spec) -> Kernel:
    """`--algo karatsuba` multiplication: the fixed-size routine up to 256 bits, memory levels over
    it above."""
    from dataclasses import replace

    from .karatsuba import _level_options, karatsuba_mul, padded_mul

    def supported(n: int) -> bool:
        return bool(level_options(n)) if is_large(n) else bool(_level_options(n))

    n = spec.operand_bytes
    if not supported(n):
        # No split fits (an odd size above the largest base): run the next size that has one
        # on zero-padded copies.
        if spec.levels is not None:
            raise AvrmpError(
                f"--levels: {spec.bits}-bit Karatsuba has no split of its own (it runs on "
                f"zero-padded operands); leave --levels out"
            )
        n_pad = next(m for m in range(n + 1, 2 * n + 2) if supported(m))
        return padded_mul(n, n_pad, karatsuba_mul_any(replace(spec, bits=8 * n_pad, name="")))
    if is_large(n):
        return large_kernel(spec)
    return karatsuba_mul(spec)


LEAF_STACK = 128  # bound on a fixed-size leaf's own frame (the 256-bit leaves use under 100 bytes)


def stack_estimate(spec: Spec) -> int:
    """Upper bound on the stack bytes a large routine uses below its return address (for deciding
    whether an MCU's SRAM holds it); 0 for the fixed sizes, whose frames are small."""
    n = spec.operand_bytes
    if spec.algo != "karatsuba" or spec.op not in ("mul", "sqr") or not is_large(n):
        return 0
    options = level_options(n, spec.op)
    if not options:  # runs on zero-padded copies (see karatsuba_mul_any): a rough upper bound
        return 8 * n + LEAF_STACK
    levels = max(options) if spec.levels is None else spec.levels
    return sum(_layout(n >> i, spec.op)["size"] + 2 for i in range(levels)) + 2 + LEAF_STACK
