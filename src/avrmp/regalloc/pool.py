"""A fixed pool of physical registers, for kernels that assign registers by hand."""

from __future__ import annotations


class RegPool:
    """Registers a kernel may still allocate, handed out in the order given."""

    def __init__(self, regs: list[int] | range) -> None:
        self.free = list(regs)

    def take(self, n: int = 1) -> list[int]:
        if n > len(self.free):
            raise ValueError(f"register pool exhausted: want {n}, have {len(self.free)}")
        out, self.free = self.free[:n], self.free[n:]
        return out

    def take_one(self) -> int:
        return self.take(1)[0]

    def take_pair(self) -> int:
        """An even register whose odd partner is also free (for MOVW)."""
        for r in self.free:
            if r % 2 == 0 and r + 1 in self.free:
                self.free.remove(r)
                self.free.remove(r + 1)
                return r
        raise ValueError("no free even register pair")

    def give(self, *regs: int) -> None:
        self.free.extend(r for r in regs if r not in self.free)
