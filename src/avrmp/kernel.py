"""What a kernel hands to the ABI wrapper, and the register pool kernels allocate from."""

from __future__ import annotations

from dataclasses import dataclass, field

from .program import Program

# Where avr-gcc passes the pointer arguments (low register of each pair).
ARG_REGS = {"r": 24, "a": 22, "b": 20}
CALLEE_SAVED = frozenset(range(2, 18)) | {28, 29}


@dataclass
class Kernel:
    """A kernel body plus the register pair in which it expects each pointer argument on entry.

    `args` maps argument names ('r', 'a', 'b') to the even register where the wrapper must put that
    pointer before the core starts; arguments left out stay where avr-gcc put them (ARG_REGS).
    """

    body: Program
    args: dict[str, int]
    notes: list[str] = field(default_factory=list)
    # Registers the body leaves free at every MUL even though it uses them elsewhere; the no-MUL
    # lowering (nomul.py) may use them as scratch besides the registers the body never touches.
    scratch: tuple[int, ...] = ()
    # Bytes of stack frame the caller reserves for the body (a subroutine of a large routine whose
    # frame is allocated once, by the routine's top level; see karatsuba_large.build).
    caller_frame: int = 0
    # A subroutine that leaves its top bytes (this many, the last quarter of its result) to the
    # caller: (d, f) in r24:r25, Z pointing at them (karatsuba_sqr.emit_top_deferred).
    top_deferred: int = 0


# Caller-saved registers first: every callee-saved register a kernel touches costs a PUSH/POP pair.
ALLOCATION_ORDER = [18, 19, 20, 21, 22, 23, 24, 25, *range(17, 1, -1)]


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
