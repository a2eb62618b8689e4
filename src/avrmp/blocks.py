"""Building blocks shared by every technique: the bounded column accumulator, the operand cache,
carry rippling, absolute differences and conditional negation.

Each block knows the largest value its registers can hold at each point, so it leaves out carry
instructions that provably add zero (the first products of a column, the top of a short column).
"""

from __future__ import annotations

from collections.abc import Sequence

from .program import PointerWindow, Program

PRODUCT_MAX = 0xFF * 0xFF


class Accumulator:
    """A little-endian multi-register accumulator with a known upper bound on its value.

    Registers whose logical value is zero may still hold garbage (`valid` False); they are cleared
    lazily, only when a carry can actually reach them.
    """

    def __init__(self, p: Program, regs: Sequence[int], zero: int) -> None:
        self.p, self.regs, self.zero = p, list(regs), zero
        self.bound = 0
        self.valid = [False] * len(self.regs)

    def _limb_bound(self, i: int) -> int:
        return self.bound >> (8 * i)

    def ensure(self, i: int) -> None:
        if not self.valid[i]:
            self.p.clr(self.regs[i])
            self.valid[i] = True

    def add(self, lo: int, hi: int | None, value_max: int, comment: str = "") -> None:
        """acc += hi:lo (hi None for a single byte), where the added value is at most value_max."""
        p, r = self.p, self.regs
        new_bound = self.bound + value_max
        if new_bound >= 1 << (8 * len(r)):
            raise AssertionError("accumulator overflow")
        width = 1 if hi is None else 2
        if self.bound == 0 and not any(self.valid[:width]):
            # Nothing to add to: copy instead (one MOVW when the registers pair up).
            if width == 2 and r[0] % 2 == 0 and r[1] == r[0] + 1 and lo % 2 == 0 and hi == lo + 1:
                p.movw(r[0], lo, comment=comment)
            else:
                p.mov(r[0], lo, comment=comment)
                if width == 2:
                    p.mov(r[1], hi)
            for i in range(width):
                self.valid[i] = True
            self.bound = new_bound
            return
        for i in range(width):
            self.ensure(i)
        p.add(r[0], lo, comment=comment)
        if width == 2:
            p.adc(r[1], hi)
        # Ripple the carry only as far as it can go.
        for i in range(width, len(r)):
            if (new_bound >> (8 * i)) == 0:
                break
            self.ensure(i)
            p.adc(r[i], self.zero)
        self.bound = new_bound

    def add_product(self, comment: str = "") -> None:
        """acc += r1:r0 (the MUL result)."""
        self.add(0, 1, PRODUCT_MAX, comment)

    def double(self) -> None:
        """acc *= 2."""
        p, r = self.p, self.regs
        new_bound = 2 * self.bound
        top = max(i for i in range(len(r)) if new_bound >> (8 * i))
        for i in range(top + 1):
            self.ensure(i)
        p.lsl(r[0])
        for i in range(1, top + 1):
            p.rol(r[i])
        self.bound = new_bound

    def shift_out(self) -> int:
        """Drop the low register (the caller has stored it) and rotate it to the top, as zero."""
        low = self.regs.pop(0)
        self.valid.pop(0)
        self.regs.append(low)
        self.valid.append(False)
        self.bound >>= 8
        return low


class OperandCache:
    """Registers caching operand bytes, loaded on demand through pointer windows, with Belady's
    optimal eviction (the whole access sequence is known when the code is generated).

    `plan` is the exact sequence of (source, index) keys that `get` will be asked for.  When a source
    has no loads left, its pointer registers join the cache.
    """

    def __init__(
        self,
        p: Program,
        regs: Sequence[int],
        sources: dict[str, PointerWindow],
        plan: Sequence[tuple[str, int]],
        free_pointers: bool = True,
    ) -> None:
        self.p, self.sources, self.plan = p, sources, list(plan)
        self.t = 0
        self.loads = 0
        # next_use[t] = position of the next access to plan[t]'s key after t (or infinity).
        inf = len(self.plan) + 1
        self.next_use = [inf] * len(self.plan)
        last: dict[tuple[str, int], int] = {}
        for t in range(len(self.plan) - 1, -1, -1):
            self.next_use[t] = last.get(self.plan[t], inf)
            last[self.plan[t]] = t
        self.release_at: dict[int, str] = {}
        if free_pointers:
            for name, when in self._last_misses(len(regs)).items():
                self.release_at[when] = name
        self.free = list(regs)
        self.holder: dict[tuple[str, int], int] = {}  # key -> register
        self.key_next: dict[tuple[str, int], int] = {}  # key -> next use position
        self.released: set[str] = set()

    def _last_misses(self, nregs: int) -> dict[str, int]:
        """Dry run with a fixed register count: where each source is loaded for the last time."""
        cached: dict[tuple[str, int], int] = {}
        last: dict[str, int] = {}
        for t, key in enumerate(self.plan):
            if key not in cached:
                if len(cached) >= nregs:
                    victim = max(
                        (k for k in cached if t == 0 or k != self.plan[t - 1]),
                        key=cached.__getitem__,
                    )
                    del cached[victim]
                last[key[0]] = t
            cached[key] = self.next_use[t]
        return last

    def get(self, key: tuple[str, int], keep: tuple[str, int] | None = None) -> int:
        """Register holding `key`, loading it if needed; `keep` must not be evicted."""
        if self.plan[self.t] != key:
            raise AssertionError(f"cache access {key} out of plan order (expected {self.plan[self.t]})")
        reg = self.holder.get(key)
        if reg is None:
            if not self.free:
                victim = max(
                    (k for k in self.holder if k != keep), key=self.key_next.__getitem__
                )
                self.free.append(self.holder.pop(victim))
                del self.key_next[victim]
            reg = self.free.pop(0)
            source, index = key
            if source in self.released:
                raise AssertionError(f"load from {source} after its pointer was released")
            self.sources[source].load(reg, index, comment=f"{source}[{index}]")
            self.loads += 1
            self.holder[key] = reg
        self.key_next[key] = self.next_use[self.t]
        released = self.release_at.get(self.t)
        self.t += 1
        if released is not None:
            self.released.add(released)
            lo = {"Y": 28, "Z": 30}[self.sources[released].ptr]
            self.free.extend((lo, lo + 1))
        return reg

    def pair(self, ka: tuple[str, int], kb: tuple[str, int]) -> tuple[int, int]:
        ra = self.get(ka)
        return ra, self.get(kb, keep=ka)
