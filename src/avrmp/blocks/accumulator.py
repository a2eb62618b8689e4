"""Multi-register accumulators that know the largest value they can hold, so they leave out carry
instructions that provably add zero (the first products of a column, the top of a short column)."""

from __future__ import annotations

from collections.abc import Sequence

from ..program.program import Emitter

PRODUCT_MAX = 0xFF * 0xFF


class Accumulator:
    """A little-endian multi-register accumulator with a known upper bound on its value.

    Registers whose logical value is zero may still hold garbage (`valid` False); they are cleared
    lazily, only when a carry can actually reach them.
    """

    def __init__(self, p: Emitter, regs: Sequence[int], zero: int, zero_hi=None,
                 fresh=None) -> None:
        """zero_hi: a register pairing with `zero` for MOVW, and fresh: a supply of new registers
        for the tops of later columns; together they let one MOVW clear two tops at once."""
        self.p, self.regs, self.zero = p, list(regs), zero
        self.bound = 0
        self.valid = [False] * len(self.regs)
        self.zero_hi, self.fresh = zero_hi, fresh
        self.next_tops: list = []  # registers already cleared for the coming columns

    def ensure(self, i: int) -> None:
        if self.valid[i]:
            return
        if self.zero_hi is not None and self.fresh is not None and not self.next_tops:
            ahead = self.fresh()
            self.p.copy_pair(self.regs[i], ahead, self.zero, self.zero_hi, comment="clear two")
            self.next_tops.append(ahead)
        else:
            self.p.clr(self.regs[i])
        self.valid[i] = True

    def add(self, lo: int, hi: int | None, value_max: int, comment: str = "") -> None:
        """acc += hi:lo (hi None for a single byte), where the added value is at most value_max."""
        p, r = self.p, self.regs
        new_bound = self.bound + value_max
        if new_bound >= 1 << (8 * len(r)):
            raise AssertionError("accumulator overflow")
        width = 1 if hi is None else 2
        if not any(self.valid[:width]):
            # Nothing to add to: copy instead (one MOVW when the registers pair up).
            if width == 2:
                p.copy_pair(r[0], r[1], lo, hi, comment=comment)
            else:
                p.mov(r[0], lo, comment=comment)
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

    def add_at(self, i: int, reg, comment: str = "") -> None:
        """acc += reg * 256^i for a single byte."""
        p, r = self.p, self.regs
        new_bound = self.bound + (0xFF << (8 * i))
        if new_bound >= 1 << (8 * len(r)):
            raise AssertionError("accumulator overflow")
        if not self.valid[i] and not self.bound >> (8 * i):
            p.mov(r[i], reg, comment=comment)  # that byte is zero and nothing can carry into it
            self.valid[i] = True
        else:
            self.ensure(i)
            p.add(r[i], reg, comment=comment)
            for j in range(i + 1, len(r)):
                if (new_bound >> (8 * j)) == 0:
                    break
                self.ensure(j)
                p.adc(r[j], self.zero)
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

    def shift_out(self, new_top=None):
        """Drop the low register (the caller has stored or kept it) and take `new_top` (default:
        the dropped register itself) as the new top register, logically zero."""
        low = self.regs.pop(0)
        self.valid.pop(0)
        if new_top is None and self.next_tops:
            self.regs.append(self.next_tops.pop(0))
            self.valid.append(True)
        else:
            self.regs.append(low if new_top is None else new_top)
            self.valid.append(False)
        self.bound >>= 8
        return low


class WideAccumulator(Accumulator):
    """An `Accumulator` that also adds multi-byte values at any byte offset (a block product's rows
    land at offsets 0..d-1 of a 2d+1-byte accumulator).  The same bound reasoning applies: a byte
    above the new bound cannot receive a carry, and bytes at and above the offset that are still
    logically zero are filled by copying instead of adding."""

    def add_at(self, pos: int, src: Sequence[int], value_max: int, comment: str = "") -> None:
        """acc += src * 256**pos, where the little-endian register value src is at most value_max."""
        p, r = self.p, self.regs
        width = len(src)
        new_bound = self.bound + (value_max << (8 * pos))
        if new_bound >= 1 << (8 * len(r)) or pos + width > len(r):
            raise AssertionError("accumulator overflow")
        if self.bound >> (8 * pos) == 0:
            # Bytes pos.. are logically zero: a copy is an exact addition.
            i = 0
            while i < width:
                if i + 1 < width:
                    p.copy_pair(r[pos + i], r[pos + i + 1], src[i], src[i + 1],
                                comment=comment if i == 0 else "")
                    i += 2
                else:
                    p.mov(r[pos + i], src[i], comment=comment if i == 0 else "")
                    i += 1
            for i in range(pos, pos + width):
                self.valid[i] = True
            self.bound = new_bound
            return
        for i in range(pos, pos + width):
            self.ensure(i)
        p.add(r[pos], src[0], comment=comment)
        for i in range(1, width):
            p.adc(r[pos + i], src[i])
        for i in range(pos + width, len(r)):
            if (new_bound >> (8 * i)) == 0:
                break
            self.ensure(i)
            p.adc(r[i], self.zero)
        self.bound = new_bound


