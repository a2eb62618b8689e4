"""Pointer arithmetic, byte strings through a pointer, and parallel register moves."""

from __future__ import annotations

from ..program.program import Emitter
from ..target.avr.abi import ARG_REGS
from ..target.avr.isa import ADIW_PAIRS, POINTER_REGS, IsaError, Mem


def add_to_pair(p: Emitter, lo: int, delta: int, comment: str = "", sbiw: bool = True) -> None:
    """The register pair at lo += delta (mod 2^16): ADIW (SBIW) for a small positive (negative)
    delta on an ADIW pair, else SUBI/SBCI, which need r16..r31.  sbiw false: a small negative
    delta by SUBI/SBCI too (the same two cycles, one word more)."""
    d = ((delta + 0x8000) & 0xFFFF) - 0x8000  # signed 16-bit
    if not d:
        return
    if lo in ADIW_PAIRS and 0 < d <= 63:
        p.adiw(lo, d, comment=comment)
    elif lo in ADIW_PAIRS and -63 <= d < 0 and sbiw:
        p.sbiw(lo, -d, comment=comment)
    elif lo >= 16:
        neg = (-d) & 0xFFFF
        p.subi(lo, neg & 0xFF, comment=comment)
        p.sbci(lo + 1, neg >> 8)
    else:
        raise IsaError("pointer arithmetic needs r16..r31")


def move_pointer(p: Emitter, ptr: str, delta: int, comment: str = "") -> None:
    """ptr += delta (X, Y or Z)."""
    add_to_pair(p, POINTER_REGS[ptr][0], delta, comment)


def parallel_move(p: Emitter, moves: dict[int, int], temp: int, pairs: bool = False) -> None:
    """Registers (pairs: aligned pairs, by MOVW) moved from source to destination (moves: src ->
    dst) as if all at once: a move whose destination no pending move still reads goes first, and
    a cycle is broken through `temp`."""
    move = p.movw if pairs else p.mov
    pending = {src: dst for src, dst in moves.items() if src != dst}
    while pending:
        ready = [s for s, d in pending.items() if d not in pending]
        if ready:
            src = ready[0]
            move(pending.pop(src), src)
        else:
            src, dst = next(iter(pending.items()))
            move(temp, src)
            del pending[src]
            pending[temp] = dst


class PointerWindow:
    """Access bytes `base[0..]` through Y or Z with LDD/STD, moving the pointer when a displacement
    leaves 0..63 (operands beyond 64 bytes).  Tracks the pointer's current offset from the base."""

    def __init__(self, p: Emitter, ptr: str, offset: int = 0) -> None:
        if ptr not in "YZ":
            raise IsaError("LDD/STD need Y or Z")
        self.p, self.ptr, self.offset = p, ptr, offset

    def mem(self, index: int) -> Mem:
        disp = index - self.offset
        if not 0 <= disp <= 63:
            # Re-centre so that nearby bytes on both sides stay reachable without another move.
            self.move_to(max(0, index - 32))
            disp = index - self.offset
        return Mem(self.ptr, disp=disp)

    def move_to(self, offset: int) -> None:
        move_pointer(self.p, self.ptr, offset - self.offset, comment=f"{self.ptr} -> base+{offset}")
        self.offset = offset

    def load(self, reg: int, index: int, comment: str = "") -> None:
        self.p.ldd(reg, self.mem(index), comment=comment)

    def store(self, index: int, reg: int, comment: str = "") -> None:
        self.p.std(self.mem(index), reg, comment=comment)


def load_disp(p: Emitter, ptr: str, off: int, count: int, name: str, first: int = 0) -> list:
    """count fresh virtual registers loaded from ptr+off.. by LDD (comments name[first..])."""
    out = []
    for i in range(count):
        v = p.v(name)
        p.ldd(v, Mem(ptr, disp=off + i), comment=f"{name}[{first + i}]")
        out.append(v)
    return out


def load_inc(p: Emitter, ptr: str, count: int, name: str, first: int = 0) -> list:
    """count fresh virtual registers loaded by LD ptr+ (comments name[first..])."""
    out = []
    for i in range(count):
        v = p.v(name)
        p.ld(v, Mem(ptr, "+"), comment=f"{name}[{first + i}]")
        out.append(v)
    return out


def store_disp(p: Emitter, ptr: str, off: int, vals: list, name: str) -> None:
    """vals stored at ptr+off.. by STD (comments name[off..])."""
    for i, v in enumerate(vals):
        p.std(Mem(ptr, disp=off + i), v, comment=f"{name}[{off + i}]")


def move_arguments(p: Emitter, wanted: dict[str, int]) -> None:
    """The pointer arguments from where avr-gcc passed them (abi.ARG_REGS) to where a kernel
    wants them (argument name -> even register), by MOVW, a cycle broken through r1:r0."""
    parallel_move(p, {ARG_REGS[name]: dst for name, dst in wanted.items()}, temp=0, pairs=True)
