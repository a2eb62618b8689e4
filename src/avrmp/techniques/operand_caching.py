"""Operand caching (Hutter and Wenger, seed 001 section 3.4 and Appendix A) and consecutive operand
caching (Seo and Kim), fully unrolled.

Geometry.  With r = floor(n/e), let S_p be the square of partial products a[pe..n) x b[0..n-pe).
The squares nest, S_r (the paper's initialisation block b_init, empty when e divides n) inside
S_{r-1} inside ... S_0 (the whole product).  Row p adds the L-shaped difference S_p \\ S_{p+1}:
the block a[pe..pe+e) against b[0..n-pe) (parts 1 and 2, the a block stays cached while b slides)
and a[(p+1)e..n) against the b block b[n-(p+1)e..n-pe) (parts 3 and 4, that b block stays cached
while a slides).  Each row is product scanning with a 3-byte accumulator over its columns
pe .. 2n-pe-1: the columns S_{p+1} already wrote (parts 2 and 3) are loaded and added, the others
(parts 1 and 4, and the row's top byte) are stored fresh.  The value of S_p fits its 2(n-pe) result
bytes, so no carry ever leaves a row.

The operand cache (Belady eviction over the whole access order, rows included) plays the role of
the paper's register sets R_A and R_B: with 2e registers it reloads exactly what Appendix A reloads,
or less, and what one row leaves cached (b[0..e), which every row's part 1 needs) the next one
uses.  Consecutive operand caching gives the cache every free register and picks e.

Pointers.  r is read back as well as written, so it may take Y (LDD/STD reach the whole result
without pointer moves up to 64 bytes); an operand whose bytes a row loads in ascending order then
takes X (LD X+).  When an operand's last byte is loaded its pointer pair joins the cache, or
becomes a zero pair, from which one MOVW clears two accumulator registers (a fourth accumulator
register cycles with the other three, so the clear serves two columns).  Which layout and which
zero pair pay depends on the access order: the cost model picks.
"""

from __future__ import annotations

from ..blocks.accumulator import PRODUCT_MAX
from ..blocks.operand_cache import next_uses
from ..blocks.pointers import PointerWindow, move_pointer
from ..errors import AvrmpError
from ..program.program import Program
from ..regalloc.pool import RegPool
from ..target.avr.abi import ALLOCATION_ORDER
from ..target.avr.isa import POINTER_REGS, Mem
from ..tuning.choices import Choices
from .kernel import Kernel

# Registers left for operand bytes once the zero register and the 3-byte accumulator are taken
# (r0:r1 hold products; X, Y, Z point at r, a, b).
CACHE_BUDGET = len(ALLOCATION_ORDER) - 4


def max_e() -> int:
    """The largest e whose 2e operand bytes all fit in registers (10 on AVR, as in the paper)."""
    return CACHE_BUDGET // 2


def rows(n: int, e: int) -> list[tuple[int, tuple[int, int] | None]]:
    """The rows in processing order: (offset pe of S_p, offset of S_{p+1} or None for b_init)."""
    r = n // e
    out: list[tuple[int, tuple[int, int] | None]] = []
    prev: int | None = None
    for p in range(r, -1, -1):
        off = p * e
        if off >= n:  # S_r is empty when e divides n: no initialisation block
            continue
        out.append((off, None if prev is None else (prev, n - prev)))
        prev = off
    return out


def row_columns(n: int, off: int, prev: tuple[int, int] | None) -> list[list[tuple[int, int]]]:
    """Partial products (i, j) of S_off \\ S_prev, by column k = off .. 2n-off-2.  Alternate columns
    run in opposite directions so that the operand pair ending one column starts the next."""
    m = n - off
    cols: list[list[tuple[int, int]]] = []
    for k in range(off, 2 * n - off - 1):
        pairs = [
            (i, k - i)
            for i in range(max(off, k - m + 1), min(k, n - 1) + 1)
            if prev is None or not (i >= prev[0] and k - i < prev[1])
        ]
        cols.append(pairs if k % 2 == 0 else pairs[::-1])
    return cols


class _SequentialWindow:
    """Bytes through X, which has no displacement: LD X+ / ST X+ when they come in ascending order,
    ADIW/SBIW first otherwise.  A load advances X unless the byte is about to be stored back
    (`load_advances` False: the partial sums of r)."""

    ptr = "X"

    def __init__(self, p: Program, name: str, load_advances: bool) -> None:
        self.p, self.name, self.load_advances, self.offset = p, name, load_advances, 0

    def _seek(self, index: int) -> None:
        move_pointer(self.p, "X", index - self.offset, comment=f"X -> {self.name}[{index}]")
        self.offset = index

    def load(self, reg: int, index: int, comment: str = "") -> None:
        self._seek(index)
        if self.load_advances and reg not in (26, 27):  # LD X+ into X itself is undefined
            self.p.ld(reg, Mem("X", "+"), comment=comment)
            self.offset += 1
        else:
            self.p.ld(reg, Mem("X"), comment=comment)

    def store(self, index: int, reg: int, comment: str = "") -> None:
        self._seek(index)
        self.p.st(Mem("X", "+"), reg, comment=comment)
        self.offset += 1


class _RowCache:
    """Operand bytes in registers for the whole known access plan, rows included, so whatever one
    row leaves cached the next one uses: Belady eviction, never evicting the byte the current
    product needs.  An operand pointer is given up at its last load, and its registers join the
    cache (the last byte goes into the pointer's own high register), except for the source in
    `withheld`, whose pointer pair the caller takes."""

    def __init__(self, regs: list[int], sources: dict, plan: list[tuple[str, int]],
                 withheld: str | None = None) -> None:
        self.sources, self.plan, self.withheld = sources, plan, withheld
        self.next_use = next_uses(plan, len(plan))
        self.release = self._plan_release(list(regs))
        run = self._run(list(regs), self.release)
        assert run is not None
        self.steps = run[0]
        self.t = 0
        self.loads = 0

    def _run(self, regs: list[int], release: dict[str, int]):
        """One pass over the plan: (register, whether it is loaded there) for each access, and
        where each source was loaded last; None if a load comes after its pointer was given up."""
        free, holder, key_next = list(regs), {}, {}
        steps: list[tuple[int, bool]] = []
        last: dict[str, int] = {}
        for t, key in enumerate(self.plan):
            source = key[0]
            hi = POINTER_REGS[self.sources[source].ptr][0] + 1
            at_release = release.get(source) == t
            joins = at_release and source != self.withheld
            reg = holder.get(key)
            if reg is None:
                if t > release.get(source, len(self.plan)):
                    return None
                if joins:
                    reg = hi
                else:
                    if not free:
                        keep = self.plan[t - 1] if t else None
                        victim = max((k for k in holder if k != keep), key=key_next.__getitem__)
                        free.append(holder.pop(victim))
                        del key_next[victim]
                    reg = free.pop(0)
                holder[key] = reg
                last[source] = t
                steps.append((reg, True))
            else:
                if joins:
                    free.append(hi)
                steps.append((reg, False))
            if joins:
                free.append(hi - 1)
            key_next[key] = self.next_use[t]
        return steps, last

    def _plan_release(self, regs: list[int]) -> dict[str, int]:
        """Give each pointer up at its last load.  The freed registers can bring later loads
        forward, so repeat until the release points settle."""
        release: dict[str, int] = {}
        run = self._run(regs, release)
        assert run is not None
        for _ in range(8):
            if run[1] == release:
                break
            trial = self._run(regs, run[1])
            if trial is None:
                break
            release, run = run[1], trial
        return release

    def next(self, key: tuple[str, int]) -> int:
        """The register holding `key`, loading it first if the plan says so."""
        if self.plan[self.t] != key:
            raise AssertionError(f"cache access {key} out of plan order")
        reg, load = self.steps[self.t]
        if load:
            self.sources[key[0]].load(reg, key[1], comment=f"{key[0]}[{key[1]}]")
            self.loads += 1
        self.t += 1
        return reg


class _RowAccumulator:
    """One row's column sums: registers lo, mid, top of weights k, k+1, k+2 in column k.

    A register holds garbage until a carry can reach it (the bound on the sum says when).  With a
    zero pair, the register is cleared together with its even/odd partner by one MOVW when that
    partner is a spare (a fourth register, the top of the next column but one): one clear per two
    columns instead of one per column."""

    def __init__(self, p: Program, regs: list[int], zero: int, zero_hi: int | None,
                 result, k: int) -> None:
        self.p, self.zero, self.zero_hi, self.result, self.k = p, zero, zero_hi, result, k
        self.regs, self.spare = list(regs[:3]), list(regs[3:])
        self.valid = [False, False, False]
        self.cleared: set[int] = set()  # spares already zero
        self.bound = 0

    def take_zero_pair(self, lo: int) -> None:
        """Switch to clearing by pairs, with lo:lo+1 (a pointer given up) as the zero pair; the
        single zero register becomes the fourth accumulator register (already zero)."""
        self.p.clr(lo, comment="zero pair (pointer given up)")
        self.p.clr(lo + 1)
        self.spare.append(self.zero)
        self.cleared.add(self.zero)
        self.zero, self.zero_hi = lo, lo + 1

    def _ensure(self, i: int) -> None:
        if self.valid[i]:
            return
        reg = self.regs[i]
        partner = reg ^ 1
        if self.zero_hi is not None and partner in self.spare and partner not in self.cleared:
            lo = min(reg, partner)
            self.p.movw(lo, self.zero, comment="clear two")
            self.cleared.add(partner)
        else:
            self.p.clr(reg)
        self.valid[i] = True

    def _add(self, lo: int, hi: int | None, value_max: int, comment: str = "") -> None:
        """acc += hi:lo (hi None for one byte), a value of at most value_max."""
        p, r = self.p, self.regs
        width = 1 if hi is None else 2
        if not any(self.valid[:width]):
            if width == 2:
                p.copy_pair(r[0], r[1], lo, hi, comment=comment)  # acc is zero: copy
            else:
                p.mov(r[0], lo, comment=comment)
            self.valid[:width] = [True] * width
        else:
            for i in range(width):
                self._ensure(i)
            p.add(r[0], lo, comment=comment)
            if hi is not None:
                p.adc(r[1], hi)
            for i in range(width, 3):  # ripple only as far as the carry can reach
                if not (self.bound + value_max) >> (8 * i):
                    break
                self._ensure(i)
                p.adc(r[i], self.zero)
        self.bound += value_max
        if self.bound >> 24:
            raise AssertionError("accumulator overflow")

    def add_product(self) -> None:
        self._add(0, 1, PRODUCT_MAX)

    def add_partial(self, width: int) -> None:
        """acc += the partial sum the previous row stored at weights k .. k+width-1 (width 1 or 2;
        r1:r0 are free before the column's first MUL)."""
        for i in range(width):
            self.result.load(i, self.k + i, comment=f"r[{self.k + i}] (partial sum)")
        what = "r[k]" if width == 1 else "r[k+1]:r[k]"
        self._add(0, 1 if width == 2 else None, (1 << (8 * width)) - 1, comment=f"acc += {what}")

    def store(self) -> None:
        """Store column k's byte (lo) and move on to column k + 1."""
        self._ensure(0)
        self.result.store(self.k, self.regs[0], comment=f"r[{self.k}]")
        low = self.regs.pop(0)
        self.valid.pop(0)
        self.spare.append(low)
        # The new top follows the old one in register order when it can: the tops then cycle
        # through two aligned pairs, and each even one is cleared together with its partner.
        ring = sorted(self.regs + self.spare)
        follow = ring[(ring.index(self.regs[1]) + 1) % len(ring)]
        if follow in self.spare:
            top = follow
        else:
            top = next((r for r in self.spare if r in self.cleared), self.spare[0])
        self.spare.remove(top)
        self.regs.append(top)
        self.valid.append(top in self.cleared)
        self.cleared.discard(top)
        self.bound >>= 8
        self.k += 1


# Where the pointers go: (r, a, b) on (X, Y, Z) in some order.  r on X stores with ST X+; r on Y
# or Z reaches every byte by displacement, and the operand on X is loaded with LD X+.
LAYOUTS = [("X", "Y", "Z"), ("Y", "Z", "X"), ("Y", "X", "Z")]
# What _fastest tries: each layout with no zero pair, with the pointer of a or b as the zero pair
# once it is given up, or (consecutive operand caching) with a zero pair from the start.
OPTIONS = [(layout, zero_pair_from) for layout in LAYOUTS
           for zero_pair_from in (None, "a", "b", "pool")]
# The option the row height is chosen with (the best at 128 to 256 bits).
HEIGHT_OPTION = (LAYOUTS[1], "b")


def _build(n: int, e: int, consecutive: bool, layout=LAYOUTS[0],
           zero_pair_from: str | None = None) -> Kernel:
    """zero_pair_from: the operand ("a" or "b") whose pointer, once given up, becomes a zero pair,
    so that the accumulator clears its registers two at a time from then on; "pool": a zero pair
    and a fourth accumulator register from the start."""
    e = min(e, n)
    p = Program()
    pool = RegPool(ALLOCATION_ORDER)
    c0 = pool.take_pair()
    pair_note = {None: "none", "pool": "from the start"}.get(
        zero_pair_from, f"the pointer of {zero_pair_from}, once given up")
    if zero_pair_from == "pool":  # clearing by pairs from the start: 6 registers, not 4
        c2 = pool.take_pair()
        acc_regs = [c0, c0 + 1, c2, c2 + 1]
        zero = pool.take_pair()
        zero_hi: int | None = zero + 1
        zero_pair_from = None
    else:
        acc_regs = [c0, c0 + 1, pool.take_one()]
        zero, zero_hi = pool.take_one(), None
    schedule = [(off, prev, row_columns(n, off, prev)) for off, prev in rows(n, e)]
    plan = [key for _, _, cols in schedule for col in cols for i, j in col
            for key in (("a", i), ("b", j))]

    def window(name: str, ptr: str):
        if ptr == "X":
            return _SequentialWindow(p, name, load_advances=name != "r")
        return PointerWindow(p, ptr)

    result = window("r", layout[0])
    # Partial sums enter two bytes at a time (two loads and an add, adc, adc instead of twice a
    # load, add and adc) when r is reached by displacement; through X, one at a time.
    partial_width = 1 if layout[0] == "X" else 2
    windows = {"a": window("a", layout[1]), "b": window("b", layout[2])}
    # Operand caching proper: the paper's 2e registers (R_A, R_B).  Consecutive: all of them.
    regs = pool.free if consecutive else pool.free[: 2 * e]
    cache = _RowCache(regs, windows, plan, withheld=zero_pair_from)
    switch_at = cache.release.get(zero_pair_from) if zero_pair_from else None

    name = "consecutive operand caching" if consecutive else "operand caching"
    p.phase(f"{name} {n}x{n} bytes, e={e}: {len(schedule)} rows, S_p = a[pe..n) x b[0..n-pe)")
    p.clr(zero)
    if zero_hi is not None:
        p.clr(zero_hi)
    for off, prev, cols in schedule:
        if prev is None:
            what = f"initialisation block a[{off}..{n - 1}] x b[0..{n - off - 1}]"
        else:
            what = f"row p={off // e}: a[{off}..{off + e - 1}] x b, a[{prev[0]}..] x b block"
        p.phase(f"{what}, columns {off}..{2 * n - off - 1}")
        # Columns S_prev wrote (prev[0] .. 2n-prev[0]-1) hold partial sums.
        partial = range(prev[0], 2 * n - prev[0]) if prev else range(0)
        acc = _RowAccumulator(p, acc_regs, zero, zero_hi, result, off)
        for k, col in enumerate(cols, start=off):
            if k in partial and (k - partial.start) % partial_width == 0:
                acc.add_partial(partial_width)
            for i, j in col:
                ra = cache.next(("a", i))
                rb = cache.next(("b", j))
                p.mul(ra, rb, comment=f"a[{i}]*b[{j}]")
                acc.add_product()
                if switch_at is not None and switch_at < cache.t:
                    acc.take_zero_pair(POINTER_REGS[windows[zero_pair_from].ptr][0])
                    switch_at = None
            acc.store()
        acc.store()  # the row's top byte: S_p fits in 2(n-pe) bytes
        # A zero pair taken in this row stays; the accumulator then keeps its fourth register.
        zero, zero_hi = acc.zero, acc.zero_hi
        acc_regs = sorted(acc.regs + acc.spare)
    notes = [f"e={e}", f"{len(schedule)} rows", f"{cache.loads} operand loads",
             "pointers: " + ", ".join(f"{v} on {ptr}" for v, ptr in zip("rab", layout)),
             f"zero pair: {pair_note}"]
    if not consecutive and 2 * e > len(regs):
        notes.append(f"e={e} exceeds the {len(regs)} cache registers: operands are reloaded")
    return Kernel(p, dict(zip("rab", (POINTER_REGS[ptr][0] for ptr in layout))), notes)


def _check_e(e: int | None) -> None:
    if e is not None and not 1 <= e <= 256:
        raise AvrmpError(f"--e {e}: operand caching needs e between 1 and 256")


def _fastest(n: int, heights, consecutive: bool, choices: Choices) -> Kernel:
    """The fastest routine by the cost model (straight-line code: the model is exact): the row
    height first (how the rows tile n; recorded as "e"), then, for that height, the pointer
    layout and zero pair (how the loads and clears fall; recorded as "layout")."""

    def cycles(k: Kernel) -> int:
        return k.body.static_cycles(choices.core) or 0

    e = choices.decide("e", lambda: min(
        heights, key=lambda e: cycles(_build(n, e, consecutive, *HEIGHT_OPTION))), heights)
    # Operand caching proper keeps to its 2e + 4 registers: no zero pair beyond them.
    options = [o for o in OPTIONS if consecutive or o[1] != "pool"]
    return choices.choose("layout", options,
                          lambda o, c: _build(n, e, consecutive, tuple(o[0]), o[1]), cycles)


def operand_caching_mul(n: int, e: int | None, choices: Choices) -> Kernel:
    _check_e(e)
    return _fastest(n, [e if e is not None else max_e()], False, choices)


def consecutive_operand_caching_mul(n: int, e: int | None, choices: Choices) -> Kernel:
    _check_e(e)
    # The best row height depends on n (how the rows tile it): try the ones near the register
    # budget unless e is given.
    heights = [e] if e is not None else range(max(1, max_e() - 3), max_e() + 4)
    return _fastest(n, heights, True, choices)
