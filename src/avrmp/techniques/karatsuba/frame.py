"""The stack frame of a multi-level Karatsuba routine and the pointers into it.

A frame holds the three entry pointers (r, a, b) at ARG_SLOT, then SCRATCH bytes lent to base
blocks for spills, then temporaries (differences, M, t) handed out and returned in stack order.
A routine finds its frame above SP: `origin` bytes above SP+1 when a caller reserved it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...blocks.pointers import add_to_pair
from ...blocks.stack import holds_sp, move_sp, read_sp
from ...program.program import Emitter, Program
from ...target.avr.abi import ARG_REGS
from ...target.avr.isa import POINTER_REGS, Mem

# Where the entry pointers are kept in the frame: a and b lowest, in the order pop_pointers
# takes them.
ARG_SLOT = {"a": 0, "b": 2, "r": 4}
SCRATCH_OFF, SCRATCH = 6, 40  # frame bytes lent to base blocks for spills


@dataclass(frozen=True)
class Loc:
    """An address: `off` bytes past argument pointer r/a/b, or past the frame base."""

    base: str
    off: int = 0

    def __add__(self, delta: int) -> Loc:
        return Loc(self.base, self.off + delta)


class Frame:
    """Stack frame of a multi-level routine: the three entry pointers, then temporaries handed out
    and returned in stack order."""

    def __init__(self, origin: int = 0) -> None:
        self.origin = origin  # bytes above SP+1 where the frame starts (see frame_reader)
        self.top = self.size = origin + SCRATCH_OFF + SCRATCH
        self.read: set[str] = set()  # the entry pointers code reads back (only those are saved)
        self.popped = 0  # bytes popped off the frame's bottom (pop_pointers)

    def alloc(self, nbytes: int) -> Loc:
        loc = Loc("frame", self.top)
        self.top += nbytes
        self.size = max(self.size, self.top)
        return loc

    def free(self, loc: Loc) -> None:
        self.top = loc.off

    @property
    def scratch_off(self) -> int:
        """Where the scratch bytes start above SP+1 (see free_y)."""
        return self.origin + SCRATCH_OFF - self.popped

    def arg_slot(self, name: str) -> int:
        """Where entry pointer `name` is kept, in bytes above SP+1 (for code that reads it)."""
        assert not self.popped, "the saved pointers were popped"
        self.read.add(name)
        return self.origin + ARG_SLOT[name]


@dataclass(frozen=True)
class Entry:
    """A routine's start: the argument pointers are still where avr-gcc passed them
    (abi.ARG_REGS), and the pointers in `preset` (pointer, argument) already hold copies of
    those arguments, set by the wrapper before the core (Kernel.args) where the frame's set-up
    leaves them alone."""

    preset: tuple[tuple[str, str], ...] = ()


def lo_of(ptr: str) -> int:
    return POINTER_REGS[ptr][0]


def add_const(p: Emitter, lo: int, value: int) -> None:
    """The pair at lo += value (mod 2^16); a small negative value by SUBI/SBCI, as the frame code
    has always done."""
    add_to_pair(p, lo, value, sbiw=False)


def load_saved_pointer(p: Emitter, ptr: str, reader: str, disp: int) -> None:
    """ptr = the pointer saved at reader+disp (two LDDs; through r0 when ptr is the reader)."""
    lo = lo_of(ptr)
    if ptr == reader:
        p.ldd(0, Mem(reader, disp=disp))
        p.ldd(lo + 1, Mem(reader, disp=disp + 1))
        p.mov(lo, 0)
    else:
        p.ldd(lo, Mem(reader, disp=disp))
        p.ldd(lo + 1, Mem(reader, disp=disp + 1))


def set_pointers(p: Emitter, entry: Entry | None = None, z_at: Loc | None = None,
                 origin: int = 0, frame: Frame | None = None, **locs: Loc) -> None:
    """Point X/Y/Z at the given locations, reading saved argument pointers through a pointer set
    to SP (Z, or Y when Z already points where it should: z_at is where Z points now), or through
    Z itself where it is on the frame already, below them (no SP read); at the routine's entry
    (see Entry) a MOVW each suffices, or none for a preset pointer.  origin: the frame starts
    that many bytes above SP+1 (a frame reserved by a caller, see frame_reader); frame, if
    given, supplies it and records the saved pointers read (Frame.read)."""
    if frame is not None:
        assert not frame.popped, "the saved pointers were popped"
        origin = frame.origin
    if entry is not None and all(loc.base in ARG_REGS for loc in locs.values()):
        for ptr, loc in locs.items():
            if (ptr, loc.base) not in entry.preset:
                p.movw(lo_of(ptr), ARG_REGS[loc.base], comment=f"{ptr} = {loc.base}")
            add_const(p, lo_of(ptr), loc.off)
        return
    z_delta = None  # Z already points near its target: move it instead of reloading it
    if z_at is not None and z_at.base == "frame" and _slots_within(z_at.off, origin, locs):
        # Z is on the frame already: it reads the saved pointers and is set last (no SP read)
        reader, shift = "Z", origin - 1 - z_at.off
    else:
        near = "Z" in locs and z_at is not None and locs["Z"].base == z_at.base \
            and abs(locs["Z"].off - z_at.off) <= 63
        if near and len(locs) == 1:
            add_const(p, 30, locs["Z"].off - z_at.off)
            return
        if near and "Y" in locs:
            z_delta = locs["Z"].off - z_at.off
            locs = {k: v for k, v in locs.items() if k != "Z"}
            reader = "Y"
        else:
            reader = "Z"
        if all(loc.base == "frame" for loc in locs.values()):
            read_sp(p, lo_of(reader), comment="SP: the frame is above it")
            shift = origin  # nothing is read through the reader: no displacement to keep in reach
        else:
            shift = frame_reader(p, lo_of(reader), origin)
    rlo = lo_of(reader)
    order = [r for r in ("X", "Y", "Z") if r in locs and r != reader]
    order += [reader] if reader in locs else []
    loaded: dict[str, tuple[int, int]] = {}  # argument pointer -> (pair holding it, offset)
    for ptr in order:
        loc, lo = locs[ptr], lo_of(ptr)
        if loc.base == "frame":
            if ptr != reader:
                p.movw(lo, rlo)
            add_const(p, lo, 1 + shift - origin + loc.off)  # frame offsets include the origin
            continue
        if loc.base in loaded:  # a second pointer from the same one: copied, not reloaded
            src, off = loaded[loc.base]
            p.movw(lo, src)
            add_const(p, lo, loc.off - off)
        else:
            load_saved_pointer(p, ptr, reader, 1 + shift + ARG_SLOT[loc.base])
            add_const(p, lo, loc.off)
            if frame is not None:
                frame.read.add(loc.base)
        loaded[loc.base] = (lo, loc.off)
    if z_delta is not None:
        add_const(p, 30, z_delta)


def pop_pointers(p: Emitter, frame: Frame, **locs: Loc) -> None:
    """Point X and Y at the saved a and b (locs: both, at offsets that need no more than
    add_const) by popping them off the bottom of the routine's own frame: four POPs, 8 cycles,
    where reading SP into the reader and four LDDs take 11.  For the last code that reads the
    saved pointers; everything above SP+1 lies 4 bytes lower from then on (Frame.popped)."""
    assert frame.origin == 0 and not frame.popped and len(locs) == 2
    by_base = {loc.base: (ptr, loc) for ptr, loc in locs.items()}
    for name in ("a", "b"):  # ARG_SLOT's order
        ptr, loc = by_base[name]
        p.pop(lo_of(ptr), comment=f"{ptr} = the saved pointer {name}: its last read")
        p.pop(lo_of(ptr) + 1)
        add_const(p, lo_of(ptr), loc.off)
        frame.read.add(name)
    frame.popped = 4


def _slots_within(z_off: int, origin: int, locs: dict[str, Loc]) -> bool:
    """Whether Z at SP+1+z_off reaches, by LDD, the saved argument pointers that locs need."""
    return all(loc.base == "frame" or 0 <= origin + ARG_SLOT[loc.base] - z_off <= 62
               for loc in locs.values())


def open_frame(p: Emitter, size: int, origin: int | None, saves: list[tuple[str, int]],
               sbiw: bool = True) -> None:
    """A routine's full frame of `size` bytes: its own (origin None: SP moves down; sbiw as
    move_sp takes it), or one a caller reserved `origin` bytes above SP+1; then the entry
    pointers in saves ((name, register) pairs) go to their slots through Y."""
    temporaries = size - 2 * len(ARG_SLOT)
    if origin is None:
        p.phase(f"stack frame: entry pointers and {temporaries} bytes of temporaries")
        move_sp(p, 28, -size, sbiw=sbiw)
        shift = 0
    elif saves:
        p.phase(f"the caller's frame: entry pointers and {temporaries} bytes of temporaries")
        shift = frame_reader(p, 28, origin)
    else:  # nothing to save in the caller's frame
        return
    save_pointers(p, shift, saves)


def save_pointers(p: Emitter, shift: int, saves: list[tuple[str, int]]) -> None:
    """The entry pointers in saves ((name, register) pairs) to their slots, Y + 1 + shift +
    ARG_SLOT[name] (Y holding SP)."""
    for name, lo in saves:
        p.std(Mem("Y", disp=1 + shift + ARG_SLOT[name]), lo, comment=f"save pointer {name}")
        p.std(Mem("Y", disp=2 + shift + ARG_SLOT[name]), lo + 1)


def close_frame(p: Program, size: int) -> None:
    """Release the routine's own frame (see open_frame); Y is read from SP again unless it
    still holds it (Y pointed at the frame's scratch bytes for the last blocks' spills)."""
    holding = holds_sp(p, 28)
    p.phase("release the stack frame")
    move_sp(p, 28, size, holding_sp=holding)


def frame_reader(p: Emitter, lo: int, origin: int = 0) -> int:
    """The pair at lo = SP, plus the frame's origin when its pointer slots would otherwise lie
    beyond LDD's reach; returns the displacement still to add (the frame is at pair+1+that)."""
    read_sp(p, lo, comment="SP: the frame is above it")
    return frame_shift(p, lo, origin)


def frame_shift(p: Emitter, lo: int, origin: int) -> int:
    """The pair at lo holds SP: move it to the frame if the pointer slots are out of LDD's reach;
    returns the displacement still to add (see frame_reader)."""
    shift = reader_shift(origin)
    add_const(p, lo, origin - shift)
    return shift


def reader_shift(origin: int) -> int:
    """The displacement frame_reader leaves to add: the origin itself while the pointer slots
    are within LDD's reach of SP, else 0 (the reader is moved to the frame)."""
    return origin if 1 + origin + SCRATCH_OFF <= 63 else 0


def free_y(p: Emitter, scratch: int, scratch_off: int | None = None,
           back: bool = False) -> None:
    """The operands are loaded: Y either points at the frame's scratch bytes (for spills; they
    start scratch_off bytes above SP+1) or joins the register pool (back: until the code
    reclaims it to point it at the frame, VProgram.lend_pointer)."""
    if scratch:
        p.comment("Y is free now: point it at the frame's scratch bytes for spills")
        read_sp(p, 28)
        off = SCRATCH_OFF if scratch_off is None else scratch_off
        p.lend(Mem("Y", disp=1 + off + i) for i in range(scratch))
    elif back:
        p.lend_pointer("Y")
    else:
        p.release(28, 29)


def z_slots(lo: int, hi: int) -> list[Mem]:
    """Z+lo .. Z+hi-1: result bytes not yet written, lent for spills."""
    return [Mem("Z", disp=j) for j in range(lo, hi)]
