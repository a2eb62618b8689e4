"""Programs over virtual registers: kernels with more live bytes than registers (Karatsuba in
registers, combination passes) are written over virtual one-byte registers (`V`) and handed to the
allocator (allocator.py), together with markers that lend it memory and pointer registers."""

from __future__ import annotations

from dataclasses import dataclass

from ..program.items import Comment, Label
from ..program.program import Emitter
from ..target.avr.isa import OPS, POINTER_REGS, IsaError, Mem, operand_effects


class V:
    """A virtual one-byte register."""

    __slots__ = ("id", "name")

    def __init__(self, id: int, name: str) -> None:
        self.id, self.name = id, name

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass
class VInstr:
    mnemonic: str
    operands: tuple
    comment: str = ""
    signed: bool = False  # ADD/ADC here, SUB/SBC in the subtracting copy of a SignedArm
    # With `signed`: what the subtracting copy has instead, (mnemonic, operands), or () for
    # nothing (None: the SUB/SBC counterpart).
    alt: tuple | None = None


class AllocationError(Exception):
    """No register assignment exists within the pool and the memory lent."""


# In a SignedArm's subtracting copy: what each signed instruction becomes.
SUBTRACTING = {"add": "sub", "adc": "sbc"}


@dataclass(frozen=True)
class Lend:
    """From here on the allocator may spill into these memory bytes (until the code stores there)."""

    slots: tuple[Mem, ...]


@dataclass(frozen=True)
class SignedArm:
    """Start (begin true) or end of a signed arm (see VProgram.arm_begin)."""

    begin: bool


@dataclass(frozen=True)
class Release:
    """From here on these physical registers (a pointer no longer needed) join the pool;
    until_claim: until a later Claim of the same registers takes them back (the allocator then
    keeps values there that outlive it elsewhere); pushed: the pointer's value comes back with
    them (VProgram.push_pointer), so memory reached through it keeps its copies."""

    regs: tuple[int, ...]
    until_claim: bool = False
    pushed: bool = False


@dataclass(frozen=True)
class Claim:
    """These physical registers leave the pool again (values there move out by MOV) and, if
    popped, are popped (VProgram.pop_pointer, VProgram.reclaim)."""

    regs: tuple[int, ...]
    popped: bool = True


def virtual_effects(ins: VInstr) -> tuple[list[V], list[V]]:
    """The virtual registers an instruction reads and writes (the instruction table's register
    access; both copies' for a signed arm, whose copies share their registers)."""
    if ins.alt:
        r0, w0 = virtual_effects(VInstr(ins.mnemonic, ins.operands))
        r1, w1 = virtual_effects(VInstr(ins.alt[0], ins.alt[1]))
        return list(dict.fromkeys(r0 + r1)), list(dict.fromkeys(w0 + w1))
    if ins.mnemonic == "clr_pair":
        return [], list(ins.operands)
    if ins.mnemonic == "copy_pair":
        d0, d1, s0, s1 = ins.operands
        return [v for v in (s0, s1) if isinstance(v, V)], [d0, d1]
    if ins.mnemonic == "pair_out":
        return list(ins.operands[:2]), []
    reads, writes = operand_effects(ins.mnemonic, ins.operands)
    return [v for v in reads if isinstance(v, V)], [v for v in writes if isinstance(v, V)]


class VProgram(Emitter):
    """Like Program, but register operands may be virtual registers."""

    def __init__(self) -> None:
        self.items: list[VInstr | Label | Comment | Lend | Release | Claim | SignedArm] = []
        self.count = 0
        self.labels_made = 0

    def v(self, name: str = "t") -> V:
        self.count += 1
        return V(self.count, f"{name}{self.count}")

    def vs(self, n: int, name: str) -> list[V]:
        return [self.v(f"{name}{i}_") for i in range(n)]

    def emit(self, mnemonic: str, *operands: object, comment: str = "") -> None:
        if mnemonic not in OPS:
            raise IsaError(f"unknown instruction {mnemonic!r}")
        self.items.append(VInstr(mnemonic, tuple(operands), comment))

    def copy_pair(self, d0, d1, s0, s1, comment: str = "") -> None:
        """d1:d0 = s1:s0; one MOVW when the allocator can pair the registers."""
        self.items.append(VInstr("copy_pair", (d0, d1, s0, s1), comment))

    def pair_out(self, d0: V, d1: V, lo: int, comment: str = "") -> None:
        """r[lo+1]:r[lo] = d1:d0, a fixed pair no value lives in (a result handed to a caller);
        one MOVW where the allocator has d0 and d1 in an aligned pair."""
        self.items.append(VInstr("pair_out", (d0, d1, lo), comment))

    def clr_pair(self, d0: V, d1: V) -> None:
        """d0 = d1 = 0, in an aligned register pair if one is free (a MOVW source later)."""
        self.items.append(VInstr("clr_pair", (d0, d1)))

    def signed(self, mnemonic: str, *operands: object, comment: str = "") -> None:
        """ADD or ADC inside a SignedArm: it becomes SUB or SBC in the arm's subtracting copy."""
        if mnemonic not in SUBTRACTING:
            raise IsaError(f"{mnemonic} has no subtracting counterpart")
        self.items.append(VInstr(mnemonic, tuple(operands), comment, signed=True))

    def arm_pair(self, add: tuple, sub: tuple, comment: str = "") -> None:
        """Inside a SignedArm: (mnemonic, *operands) `add` in the adding copy, `sub` in the
        subtracting one (an empty tuple: nothing there)."""
        alt = (sub[0], tuple(sub[1:])) if sub else ()
        self.items.append(VInstr(add[0], tuple(add[1:]), comment, signed=True, alt=alt))

    def arm_begin(self) -> None:
        """Code up to arm_end is emitted twice: as written if the T flag is set, with the signed
        instructions subtracting if it is clear.  Both copies have the same registers, spills and
        cycles (one NOP balances the jump), so any code may go inside; no labels."""
        self.items.append(SignedArm(True))

    def arm_end(self) -> None:
        self.items.append(SignedArm(False))

    def label(self, name: str) -> None:
        self.items.append(Label(name))

    def lend(self, slots) -> None:
        self.items.append(Lend(tuple(slots)))

    def release(self, *regs: int) -> None:
        self.items.append(Release(tuple(regs)))

    def reclaim(self, *regs: int) -> None:
        """Registers released for good (a pointer no longer needed) leave the pool again, so the
        code may set the pointer anew: values there move out by MOV."""
        self.items.append(Claim(tuple(regs), popped=False))

    def push_pointer(self, ptr: str) -> None:
        """Push a pointer; its registers join the pool until pop_pointer.  Memory reached
        through it keeps its contents meanwhile: values there are reloaded after the pop, not
        rescued now."""
        lo, hi = POINTER_REGS[ptr]
        self.push(lo)
        self.push(hi)
        self.items.append(Release((lo, hi), until_claim=True, pushed=True))

    def lend_pointer(self, ptr: str) -> None:
        """A pointer not needed until the code sets it anew after reclaim: its registers join
        the pool until then, and the allocator keeps values that outlive the reclaim out of
        them (reclaim would move such values out by MOV).  Memory reached through it is out of
        reach from here on, as after release."""
        self.lend_regs(*POINTER_REGS[ptr])

    def lend_regs(self, *regs: int) -> None:
        """Registers outside the pool (a pointer not needed for a while, r1:r0 where no MUL
        runs) join it until reclaim(*regs) takes them back; where it has the choice, the
        allocator puts there only values that die before (reclaim moves any other out by
        MOV)."""
        self.items.append(Release(regs, until_claim=True))

    def pop_pointer(self, ptr: str) -> None:
        """The pointer's registers leave the pool again (values there move out by MOV) and it is
        popped; memory lent through it is spill room again."""
        self.items.append(Claim(POINTER_REGS[ptr]))
