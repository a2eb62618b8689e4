"""The base block: one Karatsuba level entirely in (virtual) registers.

Operand A comes through Y (LDD), B through X (LD X+), the result goes out through Z (STD); the
allocator spills and reloads when registers run out.  Where the block sits in its routine is its
BaseRole (set by the structure); how it is emitted is its BaseForm (the options the search tries,
all recorded in the routine's header).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...blocks.arith import emit_abs_diff, emit_diff, emit_signed_fix
from ...blocks.pointers import load_disp, load_inc, store_disp
from ...blocks.stack import read_sp
from ...regalloc.vprogram import V, VProgram
from ...target.avr.isa import Mem
from .combine import OuterCombine, emit_combine, emit_fused_combine, emit_node_addend
from .frame import free_y
from .middle import emit_low_half, emit_u_and_top
from .regs import ROWS_UPTO, emit_mul_regs, emit_zero, nested


@dataclass(frozen=True)
class Src:
    """Operand bytes for a base: through its pointer from offset `off`, or (absdiff) the absolute
    difference of the m bytes at `off` and the m bytes following them, or (regs) values a block
    before it left in registers (where they have memory copies, the allocator drops them for free).
    sign (A of a parent's M that feeds the combination one level up): the bytes at `off` are
    already the difference, and the parent's t (0x00 or 0xFF) waits in the frame, `sign` bytes
    above SP+1; it is read when the combination starts, through Y on the frame, so it takes no
    register before.  ptr "Z": the bytes at `off` are read by LDD through Z (the result
    pointer), and the base's own operand pointer is free from the start."""

    off: int = 0
    absdiff: bool = False
    regs: tuple = ()
    sign: int | None = None
    ptr: str = ""


@dataclass(frozen=True)
class NodeAddend:
    """A two-level node whose result, at Z+r_off, gets an addend E of its own size at Z+e_off
    (the parent's L_1: refined Karatsuba one level up); see emit_node_addend."""

    e_off: int
    r_off: int


@dataclass(frozen=True)
class BaseRole:
    """Where a base sits.  addend: add m bytes to the product (the parent's L_1, refined
    Karatsuba): the bytes at Z+addend, or registers.  parent: instead of storing the product,
    finish the parent's combination (this base is the parent's M; the parent's result is at Z+0
    and its k is m).  keep_high: store only the product's low m bytes and return the high m in
    registers (they are the parent's L_1, the next base's addend).  free_pointers: give X and Y
    to the allocator once the operands are loaded (else X is left at b+m and Y at a).
    scratch_off: where the frame's scratch starts above SP+1 (default: after the saved entry
    pointers of a full frame).  node: this base belongs to a two-level node with an addend; with
    keep_high it is the node's first base and folds the addend in (emit_node_addend), with parent
    it finishes that node's combination.  outer: the node's result feeds the combination one
    level up (emit_fused_combine)."""

    out_off: int = 0
    addend: int | list[V] | None = None
    parent: bool = False
    keep_high: bool = False
    free_pointers: bool = True
    scratch_off: int | None = None
    node: NodeAddend | None = None
    outer: OuterCombine | None = None

    @property
    def defers_top(self) -> bool:
        """Whether the block returns a top bytes' (d, f) in r24:r25 (combine.emit_top_deferred)."""
        return self.outer is not None and self.outer.defer

    @property
    def owns_z(self) -> bool:
        """Whether the base uses Z only for its own result, so Z may be pushed during its
        products: not for a parent's combination, a node's addend or an addend in memory."""
        return not self.parent and self.node is None and not isinstance(self.addend, int)


@dataclass(frozen=True)
class BaseForm:
    """How a base is emitted.  scratch: bytes of the stack frame lent for spills.
    karatsuba_from: the shortest in-register product that takes one more Karatsuba level (0:
    none).  pair_zero: a zero register pair (MOVW clears two accumulator tops).  rows_upto: the
    longest product by the row-wise block (per product L, Hbar, M as a triple), longer ones by
    product scanning.  fold_e1: an addend's E_1 is added with E_0 (see emit_low_half).  t_flag
    (branch-free): t waits in the T flag.  combine_w: a parent's combination chunk width (wider
    chunks park carries less often but keep more bytes live); combine_keep_c: its last carry
    stays in C for the top bytes.  premask (branch-free parent): the product is XORed with t
    before the combination, t kept in T (no mask register there).  y_early: Y is given up (or
    pointed at the scratch) between A_h's loads and B_h's.  push_z (only where the role owns Z):
    Z is pushed during Hbar and M, two more registers for the products.  swap_m: M's rows run
    over |B_l - B_h|.  diff_early: |A_l - A_h| is taken before B_h is loaded, so A_h's bytes
    are the first to make room for B_h.  push_xy (keep_high, not free_pointers): X and Y wait on
    the stack from the last operand loads to the end.  node_l0_kept (a node's first base): L_0
    stays in registers for the node's addend instead of being stored and loaded back.
    signed_m (branch-free): M is the product of the differences A_l - A_h and B_h - B_l as they
    come (modulo 2^8k), made signed after it by their borrows (emit_signed_fix) and then added:
    no absolute values, no masking of M, and t is not needed (with t_flag, A's borrow waits in
    the T flag instead).  r01_early (a parent's M, its operands both absolute differences): r1:r0
    join the allocator's pool while the differences are taken, before the first MUL, so a byte
    being subtracted need not evict an operand byte."""

    scratch: int = 0
    karatsuba_from: int = 0
    pair_zero: bool = False
    rows_upto: int | tuple[int, int, int] = ROWS_UPTO
    fold_e1: bool = False
    t_flag: bool = False
    combine_w: int = 4
    combine_keep_c: bool = True
    premask: bool = False
    y_early: bool = False
    push_z: bool = False
    swap_m: bool = False
    diff_early: bool = False
    push_xy: bool = False
    node_l0_kept: bool = False
    signed_m: bool = False
    r01_early: bool = False

    def rows(self) -> tuple[int, int, int]:
        r = self.rows_upto
        return r if isinstance(r, tuple) else (r, r, r)


def emit_base(p: VProgram, m: int, a: Src, b: Src, variant: str, role: BaseRole = BaseRole(),
              form: BaseForm = BaseForm()) -> list[V] | None:
    """One Karatsuba level in registers for m-byte operands; returns the product's high m bytes
    with keep_high, else None."""
    return BaseBlock(p, m, a, b, variant, role, form).emit()


class BaseBlock:
    """The phases of one base block (see emit_base)."""

    def __init__(self, p: VProgram, m: int, a: Src, b: Src, variant: str, role: BaseRole,
                 form: BaseForm) -> None:
        assert not form.push_xy or (role.keep_high and not role.free_pointers
                                    and not a.absdiff and not b.absdiff)
        assert not form.push_z or role.owns_z
        self.p, self.m, self.a, self.b, self.variant = p, m, a, b, variant
        self.role, self.form = role, form
        self.k = (m + 1) // 2
        self.h = m - self.k
        self.l0_kept = form.node_l0_kept and role.keep_high and role.node is not None
        self.parent_t: V | None = None
        self.signed = form.signed_m and variant == "branchfree"

    def emit(self) -> list[V] | None:
        p, k, form = self.p, self.k, self.form
        self.zero, zero_hi = emit_zero(p, form.pair_zero)
        self.inner = {"karatsuba_from": form.karatsuba_from, "zero_hi": zero_hi,
                      "fold_e1": form.fold_e1, "t_flag": form.t_flag}
        a_lo, b_lo = self.low_operands()
        L = self.product(f"L = A_l * B_l ({k}x{k} bytes)", a_lo, b_lo, (), 0)
        assert len(L) == 2 * k
        role = self.role
        carry_e = emit_low_half(p, L[:k], role.addend, role.out_off,
                                not role.parent and not self.l0_kept, self.zero,
                                fold_e1=form.fold_e1)
        a_hi, b_hi, t, t_in_flag = self.high_operands_and_sign(a_lo, b_lo)
        if form.push_z:
            p.comment("the result pointer waits on the stack: Z's registers join the products")
            p.push_pointer("Z")
        Hb = self.product(f"Hbar = A_h * B_h + L_1 ({self.h}x{self.h} bytes)", a_hi, b_hi,
                          L[k:], 1)
        if self.signed:
            b_lo, sign_b = self.signed_operand_b(b_lo, b_hi)
        pair = (b_lo, a_lo) if form.swap_m else (a_lo, b_lo)
        M = self.product(f"M = {self.m_operands} ({k}x{k} bytes)", *pair, (), 2)
        if form.push_z:
            p.pop_pointer("Z")
        p.lend_regs(0, 1)  # the last MUL of the base has run
        if self.signed:
            t = self.signed_product(M, a_lo, b_lo, t, t_in_flag, sign_b)
            t_in_flag = False
        u = emit_u_and_top(p, L, Hb, M, self.m, carry_e, role.addend,
                           role.parent or self.l0_kept, self.zero, self.variant, t, t_in_flag,
                           folded=form.fold_e1 and role.addend is not None,
                           m_signed=self.signed)
        high = self.finish(L, u, Hb[k : 2 * self.h])
        p.reclaim(0, 1)  # for the MULs of what follows in the block
        return high

    def product(self, phase: str, a: list[V], b: list[V], addend, which: int) -> list[V]:
        """L (which 0), Hbar (1) or M (2): its own rows_upto (L runs with the most free
        registers)."""
        self.p.phase(phase)
        return emit_mul_regs(self.p, a, b, self.zero, self.variant, addend,
                             rows_upto=self.form.rows()[which], **self.inner)

    def load_a(self, first: int, count: int) -> list[V]:
        """A's bytes first.. by LDD through Y (or the Src's pointer)."""
        return load_disp(self.p, self.a.ptr or "Y", self.a.off + first, count, "a", first=first)

    def load_b(self, first: int, count: int) -> list[V]:
        """B's next bytes by LD X+ (or by LDD through the Src's pointer)."""
        if self.b.ptr:
            return load_disp(self.p, self.b.ptr, self.b.off + first, count, "b", first=first)
        return load_inc(self.p, "X", count, "b", first)

    @property
    def m_operands(self) -> str:
        """M's operands as its phase names them."""
        return "(A_l - A_h) * (B_h - B_l)" if self.signed else "|A_l - A_h| * |B_l - B_h|"

    @property
    def y_back(self) -> bool:
        """Whether Y, once free, comes back on the frame for the combination one level up."""
        return self.role.outer is not None

    def low_operands(self) -> tuple[list[V], list[V]]:
        """A_l and B_l (all of both operands for a parent's M, as absolute differences)."""
        p, a, b, m, k = self.p, self.a, self.b, self.m, self.k
        p.phase(f"operands ({m} bytes each)")
        if b.ptr and self.role.free_pointers:  # X is not used
            p.release(26, 27)
        if a.ptr and self.role.free_pointers:  # nor Y
            free_y(p, self.form.scratch, self.role.scratch_off, self.y_back)
        self.a_all = self.b_all = None
        lend = a.absdiff and b.absdiff and self.form.r01_early
        if lend:  # no MUL runs before L's
            p.lend_regs(0, 1)
        if a.absdiff:  # |A1 - A2| for the parent's M: both halves through Y
            self.a_all = load_disp(p, "Y", a.off, m, "a")
            mask_a = emit_abs_diff(
                p, self.a_all, lambda i: load_disp(p, "Y", a.off + m + i, 1, "a'", first=i)[0],
                self.zero)
        if b.absdiff:  # through X+: the first m bytes, then the second m bytes in order
            self.b_all = load_inc(p, "X", m, "b", 0)
            mask_b = emit_abs_diff(p, self.b_all,
                                   lambda i: load_inc(p, "X", 1, "b'", m + i)[0], self.zero)
        if a.absdiff and b.absdiff:
            p.eor(mask_a, mask_b, comment="the parent's t")
            self.parent_t = mask_a
        if lend:
            p.reclaim(0, 1)
        if b.absdiff and self.role.free_pointers:
            p.release(26, 27)
        if a.absdiff and self.role.free_pointers:
            free_y(p, self.form.scratch, self.role.scratch_off)
        a_lo = self.a_all[:k] if a.absdiff else list(a.regs[:k]) or self.load_a(0, k)
        b_lo = self.b_all[:k] if b.absdiff else list(b.regs[:k]) or self.load_b(0, k)
        return a_lo, b_lo

    def high_operands_and_sign(self, a_lo: list[V], b_lo: list[V]):
        """A_h and B_h, |A_l - A_h| and |B_l - B_h| in place of A_l and B_l, and t (returns
        a_hi, b_hi, t, whether t is in the T flag); the operand pointers are given up as soon as
        the form allows.  signed_m: A_l - A_h only, and its borrow in place of t (B's
        difference follows Hbar's product, signed_operand_b)."""
        p, a, b, m, k, form, role = self.p, self.a, self.b, self.m, self.k, self.form, self.role
        diff = emit_diff if self.signed else emit_abs_diff
        a_phase = "A_l - A_h, its borrow" if self.signed else "|A_l - A_h|"
        a_hi = self.a_all[k:] if a.absdiff else list(a.regs[k:]) or self.load_a(k, m - k)
        if form.push_xy:
            p.push_pointer("Y")
        if form.diff_early:
            p.phase(a_phase)
            mask_al = diff(p, a_lo, a_hi, self.zero)
        y_free = not a.absdiff and not a.ptr and role.free_pointers
        if y_free and form.y_early:
            free_y(p, form.scratch, role.scratch_off, self.y_back)
        b_hi = self.b_all[k:] if b.absdiff else list(b.regs[k:]) or self.load_b(k, self.h)
        if not b.absdiff and not b.ptr and role.free_pointers:
            p.release(26, 27)
        if form.push_xy:
            p.comment("the operand pointers wait on the stack for the next base")
            p.push_pointer("X")
        if y_free and not form.y_early:
            free_y(p, form.scratch, role.scratch_off, self.y_back)
        if not form.diff_early:
            p.phase(a_phase if self.signed else "|A_l - A_h|, |B_l - B_h|, t")
            mask_al = diff(p, a_lo, a_hi, self.zero)
        t_in_flag = (self.variant == "branched" or form.t_flag) \
            and not nested(k, form.karatsuba_from)
        if not self.signed:
            if form.diff_early:
                p.phase("|B_l - B_h|, t")
            mask_bl = emit_abs_diff(p, b_lo, b_hi, self.zero)
            p.eor(mask_al, mask_bl)
        if t_in_flag:  # early, to free t's register (an inner Karatsuba level would clobber T)
            p.bst(mask_al, 0, comment="T = A's borrow" if self.signed else "T = t")
        return a_hi, b_hi, mask_al, t_in_flag

    def signed_operand_b(self, b_lo: list[V], b_hi: list[V]) -> tuple[list[V], V]:
        """signed_m: B_h - B_l (modulo 2^8k) over B_h's registers, which Hbar's product has
        read, and its borrow.  Its product with A_l - A_h is minus (A_l - A_h) (B_l - B_h), the
        term Karatsuba subtracts, so the combination adds it."""
        p = self.p
        p.phase("B_h - B_l, its borrow")
        y = list(b_hi)
        if len(y) < self.k:  # odd m: B_h is a byte shorter
            y.append(p.v("b"))
            p.clr(y[-1])
        return y, emit_diff(p, y, b_lo, self.zero)

    def signed_product(self, M: list[V], x: list[V], y: list[V], sx: V, sx_in_flag: bool,
                       sy: V) -> V:
        """signed_m: M made the product of the signed differences (emit_signed_fix); returns
        its sign extension."""
        p = self.p
        p.phase("M's high half -= (B_h - B_l if A_l < A_h) + (A_l - A_h if B_h < B_l)")
        if sx_in_flag:
            sx = p.v("sign")
            p.clr(sx)
            p.bld(sx, 0)
            p.neg(sx, comment="A's borrow, from T")
        return emit_signed_fix(p, M[self.k:], x, y, sx, sy, self.zero)

    def finish(self, L: list[V], u: list[V], top: list[V]) -> list[V] | None:
        """Store the product, hand its high half on (keep_high), or combine it into the
        parent's result (parent)."""
        p, m, k, role, form = self.p, self.m, self.k, self.role, self.form
        if role.keep_high:
            if role.node is not None:  # unless kept, U was built over L_0: it comes back
                low = L[:k] if self.l0_kept else load_disp(p, "Z", role.out_off, k, "l")
                emit_node_addend(p, low + u[: m - k], role.node.e_off, role.out_off, self.zero)
            else:
                store_disp(p, "Z", role.out_off + k, u[: m - k], "r")
            if form.push_xy:
                p.pop_pointer("X")
                p.pop_pointer("Y")
            return (u + top)[m - k :]
        if not role.parent:
            store_disp(p, "Z", role.out_off + k, u + top, "r")
            return None
        self.combine(L[:k] + u + top)
        return None

    def combine(self, product: list[V]) -> None:
        """This base is its parent's M: the parent's combination, fed with M's bytes."""
        p, role, form, t = self.p, self.role, self.form, self.parent_t
        node = role.node
        at = {} if node is None else {"r_off": node.r_off, "x_lo": self.m,
                                      "carry_k": Mem("Z", disp=node.e_off)}
        if role.outer is not None and not form.scratch:
            p.reclaim(28, 29)
            read_sp(p, 28, comment="Y on the frame again, for the combination")
        if self.a.sign is not None:
            t = p.v("t")
            p.ldd(t, Mem("Y", disp=1 + self.a.sign), comment="the parent's t")
        if self.variant == "branchfree" and form.premask:
            # The product is masked now and t goes to the T flag: one register less in the
            # combination, where M, the chunk and both parked carries are live.
            p.com(t, comment="t = 0xFF now means: subtract M")
            for v in product:
                p.eor(v, t)
            p.bst(t, 0, comment="T = t")
            if role.outer is None:  # M's chain starts at once: C = t, its +1, parks nowhere
                p.lsl(t, comment="C = t: the +1 of M's negation")
                at["t_in_c"] = True
            t = None
        if role.outer is None:
            emit_combine(p, self.m, lambda i: product[i], t, self.zero, self.variant,
                         w=form.combine_w, keep_c=form.combine_keep_c, **at)
        else:
            emit_fused_combine(p, self.m, product, t, self.zero, self.variant, form.combine_w,
                               role.outer)


def first_and_second(form: BaseForm) -> tuple[BaseForm, BaseForm]:
    """The forms of a joint L/Hbar block's two bases: the first pushes X and Y (push_xy) and
    lends no scratch, the second lends the scratch and pushes nothing."""
    return replace(form, scratch=0), replace(form, push_xy=False)
