"""Operand bytes cached in registers for a known access plan, with Belady's optimal eviction."""

from __future__ import annotations

from collections.abc import Sequence

from ..program.program import Program
from ..target.avr.isa import POINTER_REGS
from .pointers import PointerWindow


def next_uses(plan: Sequence, never) -> list:
    """next_use[t]: the position of the next access to plan[t]'s key after t (`never` if none)."""
    out = [never] * len(plan)
    last: dict = {}
    for t in range(len(plan) - 1, -1, -1):
        out[t] = last.get(plan[t], never)
        last[plan[t]] = t
    return out


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
        self.next_use = next_uses(self.plan, len(self.plan) + 1)
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
            lo = POINTER_REGS[self.sources[released].ptr][0]
            self.free.extend((lo, lo + 1))
        return reg

    def next(self, key: tuple[str, int]) -> int:
        """`get` that protects the previous key of the plan, exactly as the dry run that placed the
        pointer releases does, so the two runs evict alike (needed when the plan holds runs of keys
        from one source that the caller does not access as `pair`s)."""
        return self.get(key, keep=self.plan[self.t - 1] if self.t else None)

    def pair(self, ka: tuple[str, int], kb: tuple[str, int]) -> tuple[int, int]:
        ra = self.get(ka)
        return ra, self.get(kb, keep=ka)

