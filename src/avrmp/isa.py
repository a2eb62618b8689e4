"""AVR instruction-set facts: operand constraints, sizes, cycle costs, implicit effects.

Only the instructions the generators use are described.  Each instruction is checked when it is
created, so an impossible operand (MOVW on an odd register, LDD beyond 63, ADIW on r20) is refused at
emission time with the generator's stack in the traceback, not later by the assembler.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

# Cores whose timing the cost model knows.  "avre+" is the ATmega core (and simavr's default timing);
# "avrxm" is XMEGA, where stores and PUSH take a single cycle.
CORES = ("avre+", "avrxm")

# Operand kinds: r = any register, h = r16..r31, m = r16..r23 (MULSU/FMUL), w = even register (MOVW),
# a = ADIW/SBIW pair (r24/26/28/30), k = 8-bit constant, q = 6-bit constant (0..63),
# x = LD/ST address (X, X+, -X, Y, Y+, -Y, Z, Z+, -Z), d = LDD/STD address (Y+q, Z+q),
# b = bit number 0..7, l = label, i = I/O address 0..63, s = data-space address 0..65535.
_SPEC: dict[str, tuple[str, int, int | None]] = {
    # mnemonic: (operand kinds, words, cycles on avre+; None = depends on control flow)
    "add": ("rr", 1, 1), "adc": ("rr", 1, 1), "sub": ("rr", 1, 1), "sbc": ("rr", 1, 1),
    "and": ("rr", 1, 1), "or": ("rr", 1, 1), "eor": ("rr", 1, 1), "cp": ("rr", 1, 1),
    "cpc": ("rr", 1, 1), "mov": ("rr", 1, 1), "movw": ("ww", 1, 1),
    "subi": ("hk", 1, 1), "sbci": ("hk", 1, 1), "andi": ("hk", 1, 1), "ori": ("hk", 1, 1),
    "cpi": ("hk", 1, 1), "ldi": ("hk", 1, 1),
    "com": ("r", 1, 1), "neg": ("r", 1, 1), "inc": ("r", 1, 1), "dec": ("r", 1, 1),
    "lsr": ("r", 1, 1), "ror": ("r", 1, 1), "asr": ("r", 1, 1), "swap": ("r", 1, 1),
    "lsl": ("r", 1, 1), "rol": ("r", 1, 1), "clr": ("r", 1, 1), "tst": ("r", 1, 1),
    "ser": ("h", 1, 1),
    "adiw": ("aq", 1, 2), "sbiw": ("aq", 1, 2),
    "mul": ("rr", 1, 2), "muls": ("hh", 1, 2), "mulsu": ("mm", 1, 2),
    "ld": ("rx", 1, 2), "st": ("xr", 1, 2), "ldd": ("rd", 1, 2), "std": ("dr", 1, 2),
    "lds": ("rs", 2, 2), "sts": ("sr", 2, 2),
    "push": ("r", 1, 2), "pop": ("r", 1, 2),
    "in": ("ri", 1, 1), "out": ("ir", 1, 1),
    "bst": ("rb", 1, 1), "bld": ("rb", 1, 1),
    "sec": ("", 1, 1), "clc": ("", 1, 1), "set": ("", 1, 1), "clt": ("", 1, 1),
    "sei": ("", 1, 1), "cli": ("", 1, 1), "nop": ("", 1, 1),
    "rjmp": ("l", 1, 2), "jmp": ("l", 2, 3), "rcall": ("l", 1, 3), "call": ("l", 2, 4),
    "ret": ("", 1, 4),
    "brne": ("l", 1, None), "breq": ("l", 1, None), "brcc": ("l", 1, None),
    "brcs": ("l", 1, None), "brts": ("l", 1, None), "brtc": ("l", 1, None),
    "brpl": ("l", 1, None), "brmi": ("l", 1, None), "brlo": ("l", 1, None),
    "brsh": ("l", 1, None),
    "sbrc": ("rb", 1, None), "sbrs": ("rb", 1, None),
}

# Flags: which instructions read and write the carry flag (the only flag whose life spans several
# instructions in these kernels) and which read/write T.
_READS_C = {"adc", "sbc", "sbci", "cpc", "ror", "rol", "brcc", "brcs", "brlo", "brsh"}
_WRITES_C = {
    "add", "adc", "sub", "sbc", "subi", "sbci", "cp", "cpc", "cpi", "com", "neg", "lsr", "ror",
    "asr", "lsl", "rol", "adiw", "sbiw", "mul", "muls", "mulsu", "sec", "clc",
}
# Z (zero) is read by SBC/SBCI/CPC to chain multi-byte comparisons; we only need it for branches.
_BRANCH = {"brne", "breq", "brcc", "brcs", "brts", "brtc", "brpl", "brmi", "brlo", "brsh"}
_SKIP = {"sbrc", "sbrs"}
_MEM_LOAD = {"ld", "ldd", "lds", "pop"}
_MEM_STORE = {"st", "std", "sts", "push"}

# Instruction classes reported in the metrics.
CLASS_OF = {
    "ld": "LD", "ldd": "LD", "lds": "LD", "st": "ST", "std": "ST", "sts": "ST",
    "mul": "MUL", "muls": "MUL", "mulsu": "MUL",
    "add": "ADD", "adc": "ADD", "sub": "ADD", "sbc": "ADD", "subi": "ADD", "sbci": "ADD",
    "adiw": "ADD", "sbiw": "ADD",
    "movw": "MOVW", "mov": "MOV", "push": "PUSH", "pop": "POP",
}


def _pointer_regs(ptr: str) -> tuple[int, int]:
    return {"X": (26, 27), "Y": (28, 29), "Z": (30, 31)}[ptr]


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


def _check(mnemonic: str, kind: str, value: object) -> None:
    def bad(why: str) -> IsaError:
        return IsaError(f"{mnemonic}: operand {value!r} {why}")

    if kind in "rhmwa":
        if not isinstance(value, int) or not 0 <= value <= 31:
            raise bad("is not a register r0..r31")
        if kind == "h" and value < 16:
            raise bad("must be r16..r31")
        if kind == "m" and not 16 <= value <= 23:
            raise bad("must be r16..r23")
        if kind == "w" and value % 2:
            raise bad("must be an even register")
        if kind == "a" and value not in (24, 26, 28, 30):
            raise bad("must be r24, r26, r28 or r30")
    elif kind == "k":
        if not isinstance(value, int) or not -128 <= value <= 255:
            raise bad("is not an 8-bit constant")
    elif kind == "q":
        if not isinstance(value, int) or not 0 <= value <= 63:
            raise bad("is not a constant 0..63")
    elif kind == "b":
        if not isinstance(value, int) or not 0 <= value <= 7:
            raise bad("is not a bit number 0..7")
    elif kind == "i":
        if not isinstance(value, int) or not 0 <= value <= 63:
            raise bad("is not an I/O address 0..63")
    elif kind == "s":
        if not isinstance(value, (int, str)):
            raise bad("is not a data address")
    elif kind == "x":
        if not isinstance(value, Mem) or value.disp is not None or value.ptr not in "XYZ":
            raise bad("is not X/Y/Z with optional +/-")
    elif kind == "d":
        if not isinstance(value, Mem) or value.ptr not in "YZ" or value.disp is None:
            raise bad("is not Y+q or Z+q")
        if not 0 <= value.disp <= 63:
            raise bad("has a displacement outside 0..63")
    elif kind == "l":
        if not isinstance(value, str):
            raise bad("is not a label")
    else:  # pragma: no cover
        raise AssertionError(kind)


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

    # --- facts ---
    @property
    def words(self) -> int:
        return _SPEC[self.mnemonic][1]

    @property
    def size(self) -> int:
        return 2 * self.words

    def cycles(self, core: str = "avre+") -> int | None:
        """Cycles on `core` for straight-line execution; None for branches and skips."""
        base = _SPEC[self.mnemonic][2]
        if base is None:
            return None
        if core == "avrxm":
            if self.mnemonic in ("st", "std", "sts", "push"):
                return 1
            if self.mnemonic == "ld" and self.operands[1].mode != "-":
                return 1
        return base

    @property
    def reads_carry(self) -> bool:
        return self.mnemonic in _READS_C

    @property
    def writes_carry(self) -> bool:
        return self.mnemonic in _WRITES_C

    @property
    def is_branch(self) -> bool:
        return self.mnemonic in _BRANCH or self.mnemonic in _SKIP

    @property
    def klass(self) -> str:
        return CLASS_OF.get(self.mnemonic, "OTHER")

    @property
    def touches_memory(self) -> bool:
        return self.mnemonic in _MEM_LOAD or self.mnemonic in _MEM_STORE

    def render(self) -> str:
        kinds = _SPEC[self.mnemonic][0]
        ops = ", ".join(
            f"r{v}" if k in "rhmwa" else f".L{v}" if k == "l" else str(v)
            for k, v in zip(kinds, self.operands)
        )
        text = f"\t{self.mnemonic} {ops}".rstrip() if ops else f"\t{self.mnemonic}"
        if self.comment:
            text = f"{text:<24}; {self.comment}"
        return text


@functools.lru_cache(maxsize=1 << 16)
def instr_effects(mnemonic: str, operands: tuple) -> tuple[frozenset[int], frozenset[int]]:
    """Check an instruction's operands (IsaError if the AVR cannot encode it) and return the
    registers it reads and writes.  Cached: generators emit the same instructions many times."""
    if mnemonic not in _SPEC:
        raise IsaError(f"unknown instruction {mnemonic!r}")
    kinds = _SPEC[mnemonic][0]
    if len(operands) != len(kinds):
        raise IsaError(f"{mnemonic} takes {len(kinds)} operands, got {len(operands)}")
    for kind, value in zip(kinds, operands):
        _check(mnemonic, kind, value)
    if mnemonic in ("ld", "st"):
        mem = operands[0] if mnemonic == "st" else operands[1]
        reg = operands[1] if mnemonic == "st" else operands[0]
        if mem.mode and reg in _pointer_regs(mem.ptr):
            raise IsaError(f"{mnemonic} with {mem} on its own pointer register r{reg} is undefined")
    reads, writes = _effects(mnemonic, operands)
    return frozenset(reads), frozenset(writes)


def _effects(mnemonic: str, ops: tuple) -> tuple[set[int], set[int]]:
    """Registers read and written (including implicit ones), for save lists and hazard checks."""
    kinds = _SPEC[mnemonic][0]
    reads: set[int] = set()
    writes: set[int] = set()
    regs = [v for k, v in zip(kinds, ops) if k in "rhmwa"]
    if mnemonic in ("mul", "muls", "mulsu"):
        reads.update(regs)
        writes.update((0, 1))
    elif mnemonic == "movw":
        writes.update((ops[0], ops[0] + 1))
        reads.update((ops[1], ops[1] + 1))
    elif mnemonic in ("adiw", "sbiw"):
        reads.update((ops[0], ops[0] + 1))
        writes.update((ops[0], ops[0] + 1))
    elif mnemonic in ("ldi", "ser", "clr", "pop", "in", "lds"):
        writes.add(ops[0])
    elif mnemonic in ("mov",):
        writes.add(ops[0])
        reads.add(ops[1])
    elif mnemonic in ("ld", "ldd"):
        writes.add(ops[0])
    elif mnemonic in ("st", "std", "sts", "push", "out", "cp", "cpc", "cpi", "tst", "bst",
                      "sbrc", "sbrs"):
        reads.update(regs)
    elif regs:
        writes.add(regs[0])
        reads.update(regs)
    mem = next((v for v in ops if isinstance(v, Mem)), None)
    if mem is not None:
        pair = _pointer_regs(mem.ptr)
        reads.update(pair)
        if mem.mode:
            writes.update(pair)
    return reads, writes
