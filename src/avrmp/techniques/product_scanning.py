"""Product scanning (Comba) multiplication and squaring, fully unrolled.

Operand bytes live in registers under Belady eviction over the known access order, so small
operands are loaded exactly once and large ones reload as little as the register budget allows.
"""

from __future__ import annotations

from ..blocks.accumulator import PRODUCT_MAX, Accumulator
from ..blocks.operand_cache import OperandCache, next_uses
from ..blocks.pointers import PointerWindow
from ..program.program import Program
from ..regalloc.pool import RegPool
from ..target.avr.abi import ALLOCATION_ORDER
from ..target.avr.isa import POINTER_REGS, Mem
from ..tuning.choices import Choices
from .karatsuba.sqr import plain_square
from .kernel import Kernel

ST_X_INC = Mem("X", "+")


def _columns(n: int) -> list[list[tuple[int, int]]]:
    """Product-scanning order: column k holds the pairs (i, k - i); alternate columns run backwards
    so that the operand bytes at the end of one column start the next (they are still cached)."""
    cols = []
    for k in range(2 * n - 1):
        pairs = [(i, k - i) for i in range(max(0, k - n + 1), min(k, n - 1) + 1)]
        cols.append(pairs[::-1] if k % 2 else pairs)
    return cols


def _store_column(p: Program, acc: Accumulator, k: int) -> None:
    acc.ensure(0)
    p.st(ST_X_INC, acc.regs[0], comment=f"r[{k}]")
    acc.shift_out()


# --- product-scanning multiplication ---------------------------------------------------------------

_INF = float("inf")


def _mul_column_orders(n: int) -> list[list[list[tuple[int, int]]]]:
    """Candidate pair orders for product-scanning multiplication (the cheapest is kept).  Besides
    the plain alternating order: pairs bringing in a new operand byte (a[k], b[k] in column k)
    last, so that a full register file evicts bytes the column has already used; and, in addition,
    pairs using an operand byte for the last time first, so that its register is free early."""
    plain = _columns(n)
    out = [plain]
    for dying_first in (False, True):
        cols = []
        for k, col in enumerate(plain):
            first, mid, last = [], [], []
            for i, j in col:
                new = k <= n - 1 and k in (i, j)
                dying = k >= n - 1 and k - n + 1 in (i, j)
                (last if new else first if dying and dying_first else mid).append((i, j))
            cols.append(first + mid + last)
        out.append(cols)
    return out


class _ScanCache:
    """Operand bytes in registers for a known access plan of (a, b) pairs: Belady eviction, and each
    operand pointer given up at a chosen point of the plan (`release`: source -> position), after
    which its two registers hold operand bytes too.  When that point is a load, the byte goes into
    the pointer's own high register (LDD computes the address before it writes, so `ldd r29, Y+q`
    is fine) and only the low register is freed.  Eviction never drops a byte that is still needed
    after its pointer is given up.  `_count_loads` follows the same rules without emitting code."""

    def __init__(self, regs, windows: dict[str, PointerWindow], plan,
                 release: dict[str, int]) -> None:
        self.windows, self.plan, self.release = windows, plan, release
        self.next_use = next_uses(plan, _INF)
        self.free = list(regs)
        self.holder: dict[tuple[str, int], int] = {}
        self.key_next: dict[tuple[str, int], float] = {}
        self.dead: list[int] = []  # registers whose byte the current pair uses for the last time
        self.t = 0
        self.loads = 0

    def _victim(self, keep) -> tuple[str, int] | None:
        best, best_next = None, -1.0
        for key, nxt in self.key_next.items():
            if key == keep or (nxt != _INF and nxt > self.release.get(key[0], _INF)):
                continue
            if nxt > best_next:
                best, best_next = key, nxt
        return best

    def get(self, key: tuple[str, int], keep: tuple[str, int] | None = None) -> int:
        t = self.t
        if self.plan[t] != key:
            raise AssertionError(f"cache access {key} out of plan order (expected {self.plan[t]})")
        if not t & 1:  # a new pair: the bytes the last one used for the last time are gone
            self.free += self.dead
            self.dead = []
        source, index = key
        release_here = self.release.get(source) == t
        reg = self.holder.get(key)
        if reg is None:
            if t > self.release.get(source, _INF):
                raise AssertionError(f"load of {key} after its pointer was given up")
            window = self.windows[source]
            if release_here:
                reg = POINTER_REGS[window.ptr][0] + 1
            else:
                if not self.free:
                    victim = self._victim(keep)
                    if victim is None:
                        raise AssertionError("no register can be freed")
                    self.free.append(self.holder.pop(victim))
                    del self.key_next[victim]
                reg = self.free.pop(0)
            window.load(reg, index, comment=f"{source}[{index}]")
            self.loads += 1
            self.holder[key] = reg
        elif release_here:
            self.free.append(POINTER_REGS[self.windows[source].ptr][0] + 1)
        if release_here:
            self.free.append(POINTER_REGS[self.windows[source].ptr][0])
        nxt = self.next_use[t]
        self.t += 1
        if nxt == _INF:  # last use: the register is free once the pair is multiplied
            del self.holder[key]
            self.key_next.pop(key, None)
            self.dead.append(reg)
        else:
            self.key_next[key] = nxt
        return reg

    def pair(self, ka, kb) -> tuple[int, int]:
        ra = self.get(ka)
        return ra, self.get(kb, keep=ka)


def _count_loads(plan, nregs: int, release: dict[str, int], next_use) -> int | None:
    """What `_ScanCache` does on `plan`, counting loads only (the planner runs this many times)."""
    big = len(plan) + 1  # stands for "never again"
    ra, rb = release.get("a", big), release.get("b", big)
    nb = 1 + max(i for _, i in plan)
    ids = [i if s == "a" else nb + i for s, i in plan]
    cached: dict[int, int] = {}  # key -> next use
    free, loads, prev, dead = nregs, 0, -1, 0
    for t, key in enumerate(ids):
        if not t & 1:
            free, dead = free + dead, 0
        limit = ra if key < nb else rb
        here = t == limit
        if key not in cached:
            if t > limit:
                return None
            if not here:
                if not free:
                    keep = prev if t & 1 else -1
                    victim, far = -1, -1
                    for k, nxt in cached.items():
                        if nxt > far and k != keep and (nxt == big or nxt <= (ra if k < nb else rb)):
                            victim, far = k, nxt
                    if victim < 0:
                        return None
                    del cached[victim]
                    free += 1
                free -= 1
            loads += 1
        elif here:
            free += 1
        if here:
            free += 1
        nxt = next_use[t]
        if nxt == _INF:
            cached.pop(key, None)
            dead += 1
        else:
            cached[key] = nxt
        prev = key
    return loads


def _plan_release(plan, nregs: int, grid: int = 12) -> tuple[int, dict[str, int]]:
    """Where to give up each operand pointer, as (loads, release): coordinate descent over the
    accesses of each source after its last new byte, on a grid of about `grid` points and then on
    ever finer grids around the best point."""
    next_use = next_uses(plan, _INF)
    first: dict = {}
    for t, key in enumerate(plan):
        first.setdefault(key, t)
    cands = {}
    for s in ("a", "b"):
        start = max(t for key, t in first.items() if key[0] == s)
        cands[s] = [t for t in range(start, len(plan)) if plan[t][0] == s]
    best_loads = _count_loads(plan, nregs, {}, next_use)
    best: dict[str, int] = {}
    if best_loads is None:
        raise AssertionError("operand plan cannot be served")
    tried: dict[tuple, int | None] = {}

    def trial(rel: dict[str, int]) -> None:
        nonlocal best_loads, best
        key = tuple(sorted(rel.items()))
        if key in tried:
            return
        tried[key] = loads = _count_loads(plan, nregs, rel, next_use)
        if loads is not None and loads < best_loads:
            best_loads, best = loads, dict(rel)

    for _ in range(2):
        for s in ("a", "b"):
            c = cands[s]
            step = max(1, len(c) // grid)
            for t in c[::step]:
                trial({**best, s: t})
            while s in best and step > 1:  # refine around the best point, ever finer
                at, step = c.index(best[s]), max(1, step // 4)
                for t in c[max(0, at - 4 * step): at + 4 * step + 1: step]:
                    trial({**best, s: t})
    return best_loads, best


class _NegTopAccumulator:
    """The column sum in three registers lo, mid, top, without a zero register: the first carry into
    a column's top is taken with `sbc top, top` (top = -carry, whatever it held) and later ones with
    `sbci top, 0`, so top holds minus its value until a `neg` as it becomes the next column's mid.
    That costs what `clr top; adc top, zero` costs and frees the zero register for operand bytes.
    Carries are rippled only as far as the bound on the sum says they can reach."""

    def __init__(self, p: Program, regs: list[int]) -> None:
        if min(regs) < 16:
            raise AssertionError("SBCI needs r16..r31")
        self.p, self.regs = p, list(regs)
        self.bound = 0
        self.valid = [False, False, False]

    def _clear(self, i: int) -> None:
        if not self.valid[i]:
            self.p.clr(self.regs[i])
            self.valid[i] = True

    def add_product(self, comment: str = "") -> None:
        p, r = self.p, self.regs
        bound = self.bound + PRODUCT_MAX
        if bound >> 24:
            raise AssertionError("accumulator overflow")
        if not self.valid[0] and not self.valid[1]:
            p.copy_pair(r[0], r[1], 0, 1, comment=comment)
            self.valid[0] = self.valid[1] = True
        else:
            self._clear(0)
            self._clear(1)
            p.add(r[0], 0, comment=comment)
            p.adc(r[1], 1)
            if bound >> 16:
                if self.valid[2]:
                    p.sbci(r[2], 0)
                else:
                    p.sbc(r[2], r[2])
                    self.valid[2] = True
        self.bound = bound

    def store(self, k: int) -> None:
        """Store the column's low byte as r[k] and move on to the next column."""
        self._clear(0)
        self.p.st(ST_X_INC, self.regs[0], comment=f"r[{k}]")
        if self.valid[2]:
            self.p.neg(self.regs[2])
        self.regs = self.regs[1:] + self.regs[:1]
        self.valid = self.valid[1:] + [False]
        self.bound >>= 8


def product_scanning_mul(n: int, choices: Choices) -> Kernel:
    """Column k sums a[i]*b[k-i] in a three-register accumulator and stores r[k] with ST X+.  The
    operand bytes are cached in all the other registers, Y and Z included once their last load is
    done; the pair order and the points where Y and Z are given up are chosen for the fewest
    loads (recorded as "schedule": the order's index and the release points)."""
    pool = RegPool(ALLOCATION_ORDER)
    c0 = pool.take_pair()
    acc_regs = [c0, c0 + 1, pool.take_one()]
    orders = _mul_column_orders(n)

    def plan_of(cols) -> list:
        return [key for col in cols for i, j in col for key in (("a", i), ("b", j))]

    def search() -> dict:
        best = None
        for index, cols in enumerate(orders):
            loads, release = _plan_release(plan_of(cols), len(pool.free))
            if best is None or loads < best[0]:
                best = (loads, {"order": index, "release": release})
        return best[1]

    schedule = choices.decide("schedule", search)
    if not 0 <= schedule["order"] < len(orders):  # a recorded index: -1 would pick another order
        raise IndexError(f"column order {schedule['order']} of {len(orders)}")
    cols = orders[schedule["order"]]
    plan = plan_of(cols)
    p = Program()
    windows = {"a": PointerWindow(p, "Y"), "b": PointerWindow(p, "Z")}
    cache = _ScanCache(pool.free, windows, plan, schedule["release"])
    p.phase(f"product scanning {n}x{n} bytes: column k sums a[i]*b[k-i]")
    acc = _NegTopAccumulator(p, acc_regs)
    for k, col in enumerate(cols):
        for i, j in col:
            ra, rb = cache.pair(("a", i), ("b", j))
            p.mul(ra, rb, comment=f"a[{i}]*b[{j}]")
            acc.add_product()
        acc.store(k)
    acc.store(2 * n - 1)
    planned = _count_loads(plan, len(pool.free), schedule["release"], next_uses(plan, _INF))
    if cache.loads != planned:
        raise AssertionError("the emitted loads differ from the planned ones")
    return Kernel(p, {"r": 26, "a": 28, "b": 30}, [f"{cache.loads} operand loads"])


def product_scanning_sqr(n: int, has_mul: bool, choices: Choices) -> Kernel:
    """Product-scanning squaring, each cross product once: the register-allocated block
    (`blocks.square.emit_square`: cross sums doubled by parked carry chains two or more bytes at
    a time, result bytes stored as they are final) or the column-by-column kernel below,
    whichever the cost model finds faster (recorded as "form").  Without a hardware multiplier
    only the column kernel: the block leaves no registers free for the lowered MULs."""
    if not has_mul or n > 32:  # LDD/STD reach 63 bytes
        return _column_sqr(n)
    return choices.choose(
        "form", ("block", "columns"),
        lambda form, c: plain_square(n, c) if form == "block" else _column_sqr(n),
        cost=lambda kern: kern.body.static_cycles(choices.core))


def _column_sqr(n: int) -> Kernel:
    """Each cross product a[i]*a[j], i < j, once; the column's cross sum is doubled, then the
    carry from the previous column and the square a[k/2]^2 are added."""
    p = Program()
    pool = RegPool(ALLOCATION_ORDER + [28, 29])
    regs6 = pool.take(6)
    zero = pool.take_one()
    schedule = []
    for k, col in enumerate(_columns(n)):
        cross = [(i, j) for i, j in col if i < j]
        schedule.append((k, cross, k // 2 if k % 2 == 0 else None))
    plan = []
    for _, cross, sq in schedule:
        for i, j in cross:
            plan += [("a", i), ("a", j)]
        if sq is not None:
            plan.append(("a", sq))
    cache = OperandCache(p, pool.free, {"a": PointerWindow(p, "Z")}, plan)
    p.phase(f"product-scanning squaring {n} bytes: column k = carry + 2*sum a[i]*a[j] + a[k/2]^2")
    p.clr(zero)
    acc = Accumulator(p, regs6[0:3], zero)
    spare = regs6[3:6]
    for k, cross, sq in schedule:
        col = Accumulator(p, spare, zero)
        for i, j in cross:
            ri, rj = cache.pair(("a", i), ("a", j))
            p.mul(ri, rj, comment=f"a[{i}]*a[{j}]")
            col.add_product()
        if cross:
            col.double()
        if sq is not None:
            r = cache.get(("a", sq))
            p.mul(r, r, comment=f"a[{sq}]^2")
            col.add_product()
        carry = [reg for i, reg in enumerate(acc.regs) if acc.bound >> (8 * i) and acc.valid[i]]
        if carry:
            col.add(carry[0], carry[1] if len(carry) > 1 else None, acc.bound, comment="carry in")
        spare = acc.regs
        acc = col
        _store_column(p, acc, k)
    _store_column(p, acc, 2 * n - 1)
    return Kernel(p, {"r": 26, "a": 30}, [f"{cache.loads} operand loads"])

