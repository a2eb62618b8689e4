"""The AVR instructions avrmp emits: one table of operand kinds, register access, size, cycles per
core, flags and metric class, read by the builder, the register allocator and the cost model.

An instruction is checked when it is created, so an impossible operand (MOVW on an odd register,
LDD beyond 63, ADIW on r20) is refused at emission time with the generator's stack in the
traceback, not later by the assembler.

Cycles are those of the AVR Instruction Set Manual (Microchip DS40002198) for internal SRAM, per
core: "avre" is AVRe and AVRe+ (ATmega, ATtiny: the same timing), "avrxm" is XMEGA, where a store
or PUSH takes one cycle less and a displaced or pre-decrement load one more.  A branch or skip has
None: its cost depends on the path (the cost model counts it not taken).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

CORES = ("avre", "avrxm")


@dataclass(frozen=True)
class Op:
    """One mnemonic.  kinds: a letter per operand, r = any register, h = r16..r31, m = r16..r23
    (MULSU), w = even register of a pair (MOVW), a = ADIW/SBIW pair (r24/26/28/30), k = 8-bit
    constant, q = 0..63, x = X/Y/Z with optional +/- (LD/ST), d = Y+q or Z+q (LDD/STD), b = bit
    0..7, l = label, i = I/O address 0..63, s = data-space address.  access: per operand, r =
    read, w = written only, m = read and written, - = not a register.  cycles: per core, an int,
    a (plain, post-increment, pre-decrement) triple for LD/ST, or None for a branch."""

    kinds: str
    access: str
    words: int
    cycles: dict[str, int | tuple[int, int, int] | None]
    reads_flags: str = ""
    writes_flags: str = ""
    klass: str = "OTHER"
    implicit_writes: tuple[int, ...] = ()


def _same(c) -> dict:
    return {core: c for core in CORES}


def _ops(names: str, kinds: str, access: str, cycles=1, words: int = 1, **kw) -> dict[str, Op]:
    timing = cycles if isinstance(cycles, dict) else _same(cycles)
    return {name: Op(kinds, access, words, timing, **kw) for name in names.split()}


_ARITH = "ZCNVSH"  # the flags an 8-bit addition or subtraction writes (only C and T matter here)
OPS: dict[str, Op] = {
    **_ops("add sub", "rr", "mr", writes_flags=_ARITH, klass="ADD"),
    **_ops("adc sbc", "rr", "mr", reads_flags="C", writes_flags=_ARITH, klass="ADD"),
    **_ops("subi", "hk", "m-", writes_flags=_ARITH, klass="ADD"),
    **_ops("sbci", "hk", "m-", reads_flags="C", writes_flags=_ARITH, klass="ADD"),
    **_ops("and or eor", "rr", "mr", writes_flags="ZNVS"),
    **_ops("andi ori", "hk", "m-", writes_flags="ZNVS"),
    **_ops("cp", "rr", "rr", writes_flags=_ARITH),
    **_ops("cpc", "rr", "rr", reads_flags="C", writes_flags=_ARITH),
    **_ops("cpi", "hk", "r-", writes_flags=_ARITH),
    **_ops("mov", "rr", "wr", klass="MOV"),
    **_ops("movw", "ww", "wr", klass="MOVW"),
    **_ops("ldi", "hk", "w-"),
    **_ops("ser", "h", "w"),
    **_ops("clr", "r", "w"),
    **_ops("com neg lsr asr lsl", "r", "m", writes_flags="ZCNVS"),
    **_ops("ror rol", "r", "m", reads_flags="C", writes_flags="ZCNVS"),
    **_ops("inc dec swap", "r", "m", writes_flags="ZNVS"),
    **_ops("tst", "r", "r", writes_flags="ZNVS"),
    **_ops("adiw sbiw", "aq", "m-", 2, writes_flags="ZCNVS", klass="ADD"),
    **_ops("mul", "rr", "rr", 2, writes_flags="ZC", klass="MUL", implicit_writes=(0, 1)),
    **_ops("muls", "hh", "rr", 2, writes_flags="ZC", klass="MUL", implicit_writes=(0, 1)),
    **_ops("mulsu", "mm", "rr", 2, writes_flags="ZC", klass="MUL", implicit_writes=(0, 1)),
    **_ops("ld", "rx", "w-", {"avre": (2, 2, 2), "avrxm": (2, 2, 3)}, klass="LD"),
    **_ops("ldd", "rd", "w-", {"avre": 2, "avrxm": 3}, klass="LD"),
    **_ops("lds", "rs", "w-", {"avre": 2, "avrxm": 3}, words=2, klass="LD"),
    **_ops("st", "xr", "-r", {"avre": (2, 2, 2), "avrxm": (1, 1, 2)}, klass="ST"),
    **_ops("std", "dr", "-r", 2, klass="ST"),
    **_ops("sts", "sr", "-r", 2, words=2, klass="ST"),
    **_ops("push", "r", "r", {"avre": 2, "avrxm": 1}, klass="PUSH"),
    **_ops("pop", "r", "w", 2, klass="POP"),
    **_ops("in", "ri", "w-"),
    **_ops("out", "ir", "-r"),
    **_ops("bst", "rb", "r-", writes_flags="T"),
    **_ops("bld", "rb", "m-", reads_flags="T"),
    **_ops("sec", "", "", writes_flags="C"),
    **_ops("clc", "", "", writes_flags="C"),
    **_ops("set", "", "", writes_flags="T"),
    **_ops("clt", "", "", writes_flags="T"),
    **_ops("sei cli", "", "", writes_flags="I"),
    **_ops("nop", "", ""),
    **_ops("rjmp", "l", "-", 2),
    **_ops("jmp", "l", "-", 3, words=2),
    **_ops("rcall", "l", "-", {"avre": 3, "avrxm": 2}),
    **_ops("call", "l", "-", {"avre": 4, "avrxm": 3}, words=2),
    **_ops("ret", "", "", 4),
    **_ops("brne breq brpl brmi", "l", "-", None, reads_flags="ZN"),
    **_ops("brcc brcs brlo brsh", "l", "-", None, reads_flags="C"),
    **_ops("brts brtc", "l", "-", None, reads_flags="T"),
    **_ops("sbrc sbrs", "rb", "r-", None),
}

# The I/O registers the generated code touches (the same address on every AVR core).
SPL, SPH, SREG = 0x3D, 0x3E, 0x3F

REG_KINDS = "rhmwa"
PAIR_KINDS = "wa"  # the operand names the even register of a pair
POINTER_REGS = {"X": (26, 27), "Y": (28, 29), "Z": (30, 31)}
POINTER_OF = {reg: ptr for ptr, pair in POINTER_REGS.items() for reg in pair}
ADIW_PAIRS = (24, 26, 28, 30)
# EOR, SUB or SBC of a register with itself sets it without reading it (0, 0, -C).
SELF_DEFINING = frozenset({"eor", "sub", "sbc"})


def op(mnemonic: str) -> Op:
    try:
        return OPS[mnemonic]
    except KeyError:
        raise IsaError(f"unknown instruction {mnemonic!r}") from None


@dataclass(frozen=True)
class Mem:
    """A memory operand: pointer register X/Y/Z with mode '' | '+' (post-inc) | '-' (pre-dec),
    or a displacement (LDD/STD, Y or Z only)."""

    ptr: str
    mode: str = ""
    disp: int | None = None

    def __str__(self) -> str:
        if self.disp is not None:
            return f"{self.ptr}+{self.disp}"
        return {"": self.ptr, "+": f"{self.ptr}+", "-": f"-{self.ptr}"}[self.mode]


class IsaError(ValueError):
    """An instruction that the AVR cannot encode; a generator bug, never a user error."""


def _int_in(value: object, lo: int, hi: int) -> bool:
    return isinstance(value, int) and lo <= value <= hi


def _register_problem(kind: str, value: object) -> str | None:
    if not _int_in(value, 0, 31):
        return "is not a register r0..r31"
    return {
        "h": None if value >= 16 else "must be r16..r31",
        "m": None if 16 <= value <= 23 else "must be r16..r23",
        "w": None if value % 2 == 0 else "must be an even register",
        "a": None if value in ADIW_PAIRS else "must be r24, r26, r28 or r30",
    }.get(kind)


def _operand_problem(kind: str, value: object) -> str | None:
    """Why `value` cannot be an operand of this kind (None if it can)."""
    if kind in REG_KINDS:
        return _register_problem(kind, value)
    if kind == "x":
        ok = isinstance(value, Mem) and value.disp is None and value.ptr in "XYZ"
        return None if ok else "is not X/Y/Z with optional +/-"
    if kind == "d":
        if not isinstance(value, Mem) or value.ptr not in "YZ" or value.disp is None:
            return "is not Y+q or Z+q"
        return None if 0 <= value.disp <= 63 else "has a displacement outside 0..63"
    checks = {
        "k": (lambda v: _int_in(v, -128, 255), "is not an 8-bit constant"),
        "q": (lambda v: _int_in(v, 0, 63), "is not a constant 0..63"),
        "b": (lambda v: _int_in(v, 0, 7), "is not a bit number 0..7"),
        "i": (lambda v: _int_in(v, 0, 63), "is not an I/O address 0..63"),
        "s": (lambda v: isinstance(v, (int, str)), "is not a data address"),
        "l": (lambda v: isinstance(v, str), "is not a label"),
    }
    ok, why = checks[kind]
    return None if ok(value) else why


def check(mnemonic: str, operands: tuple) -> None:
    """IsaError unless the AVR can encode the instruction."""
    kinds = op(mnemonic).kinds
    if len(operands) != len(kinds):
        raise IsaError(f"{mnemonic} takes {len(kinds)} operands, got {len(operands)}")
    for kind, value in zip(kinds, operands):
        why = _operand_problem(kind, value)
        if why:
            raise IsaError(f"{mnemonic}: operand {value!r} {why}")
    if mnemonic in ("ld", "st"):
        mem, reg = (operands[0], operands[1]) if mnemonic == "st" else (operands[1], operands[0])
        if mem.mode and reg in POINTER_REGS[mem.ptr]:
            raise IsaError(f"{mnemonic} with {mem} on its own pointer register r{reg} is undefined")


def operand_effects(mnemonic: str, operands: tuple) -> tuple[list, list]:
    """The register operands read and written, in operand order: physical registers (ints, both
    of a pair) or the virtual registers the allocator gives operands (left as they are)."""
    info = op(mnemonic)
    reads: list = []
    writes: list = []
    for kind, access, value in zip(info.kinds, info.access, operands):
        if kind not in REG_KINDS:
            continue
        regs = [value, value + 1] if kind in PAIR_KINDS and isinstance(value, int) else [value]
        if access in "rm":
            reads += regs
        if access in "wm":
            writes += regs
    if mnemonic in SELF_DEFINING and len(operands) == 2 and operands[0] == operands[1]:
        reads = []
    return reads, writes


@functools.lru_cache(maxsize=1 << 16)
def instr_effects(mnemonic: str, operands: tuple) -> tuple[frozenset[int], frozenset[int]]:
    """Check an instruction (IsaError if the AVR cannot encode it) and return the physical
    registers it reads and writes, implicit ones (MUL's r1:r0, a pointer) included.  Cached:
    generators emit the same instructions many times."""
    check(mnemonic, operands)
    reads, writes = operand_effects(mnemonic, operands)
    writes += op(mnemonic).implicit_writes
    mem = next((v for v in operands if isinstance(v, Mem)), None)
    if mem is not None:
        reads += POINTER_REGS[mem.ptr]
        if mem.mode:
            writes += POINTER_REGS[mem.ptr]
    return frozenset(reads), frozenset(writes)


# They push or pop a return address: a cycle more on a part whose return address is 3 bytes.
RETURN_ADDRESS_OPS = frozenset({"rcall", "call", "ret"})


def cycles(mnemonic: str, operands: tuple, core: str = "avre", pc_bytes: int = 2) -> int | None:
    """Cycles on `core`, with `pc_bytes`-byte return addresses, for straight-line execution;
    None for branches and skips."""
    c = op(mnemonic).cycles[core]
    if isinstance(c, tuple):
        mem = operands[0] if mnemonic == "st" else operands[1]
        return c["+-".find(mem.mode) + 1]
    return c + pc_bytes - 2 if mnemonic in RETURN_ADDRESS_OPS else c


@dataclass(frozen=True)
class Instr:
    """One AVR instruction with checked operands and its implicit effects."""

    mnemonic: str
    operands: tuple = ()
    comment: str = ""
    reads: frozenset[int] = field(default=frozenset(), compare=False)
    writes: frozenset[int] = field(default=frozenset(), compare=False)

    @staticmethod
    def make(mnemonic: str, *operands: object, comment: str = "") -> Instr:
        reads, writes = instr_effects(mnemonic, operands)
        return Instr(mnemonic, operands, comment, reads, writes)

    @property
    def words(self) -> int:
        return OPS[self.mnemonic].words

    @property
    def size(self) -> int:
        return 2 * self.words

    def cycles(self, core: str = "avre", pc_bytes: int = 2) -> int | None:
        return cycles(self.mnemonic, self.operands, core, pc_bytes)

    @property
    def reads_carry(self) -> bool:
        return "C" in OPS[self.mnemonic].reads_flags

    @property
    def writes_carry(self) -> bool:
        return "C" in OPS[self.mnemonic].writes_flags

    @property
    def is_branch(self) -> bool:
        return OPS[self.mnemonic].cycles["avre"] is None

    @property
    def klass(self) -> str:
        return OPS[self.mnemonic].klass
