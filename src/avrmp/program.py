"""The program builder: a list of checked instructions, labels and phase comments, plus metrics.

Kernels call `p.mul(a, b)`, `p.adc(d, r)`, `p.ldd(d, Mem("Y", disp=3))` and so on; every call builds
an `Instr` (which checks the operands) and appends it.  The builder also refuses a carry consumed after
a MUL clobbered it: `add; mul; adc` is a silent bug on AVR, because MUL writes C.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .isa import _SPEC, Instr, IsaError, Mem

__all__ = ["Comment", "IsaError", "Label", "Mem", "PointerWindow", "Program"]


@dataclass(frozen=True)
class Label:
    name: str

    def render(self) -> str:
        return f".L{self.name}:"


@dataclass(frozen=True)
class Comment:
    text: str

    def render(self) -> str:
        return f"\t; {self.text}"


Item = Instr | Label | Comment

# static_cycles gives up on recursion deeper than this.
_MAX_CALL_DEPTH = 64

# Python keywords and builtins that are also mnemonics get a trailing underscore: p.and_, p.or_, p.in_.
_ALIASES = {"and_": "and", "or_": "or", "in_": "in"}


class Emitter:
    """What every instruction list offers kernels: `p.adc(d, r)` and friends for each mnemonic,
    phase comments and fresh label names.  Subclasses provide `items`, `_labels` and `emit`."""

    items: list
    _labels: int

    def emit(self, mnemonic: str, *operands: object, comment: str = ""):
        raise NotImplementedError

    def __getattr__(self, name: str) -> Callable[..., object]:
        mnemonic = _ALIASES.get(name, name)
        if mnemonic not in _SPEC:
            raise AttributeError(name)
        return lambda *ops, comment="": self.emit(mnemonic, *ops, comment=comment)

    def comment(self, text: str) -> None:
        self.items.append(Comment(text))

    def phase(self, text: str) -> None:
        """A named phase of the algorithm, rendered as `; --- text ---`."""
        self.items.append(Comment(f"--- {text} ---"))

    def new_label(self, hint: str) -> str:
        self._labels += 1
        return f"{hint}{self._labels}"


class Program(Emitter):
    """An instruction sequence under construction."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self._last_carry_writer: Instr | None = None
        self._labels = 0
        self._label_names: set[str] = set()

    # --- emission ---
    def emit(self, mnemonic: str, *operands: object, comment: str = "") -> Instr:
        ins = Instr.make(mnemonic, *operands, comment=comment)
        last = self._last_carry_writer
        if ins.reads_carry and last is not None and last.mnemonic.startswith("mul"):
            raise IsaError(f"{mnemonic} would consume the carry clobbered by the preceding MUL")
        if ins.writes_carry:
            self._last_carry_writer = ins
        self.items.append(ins)
        return ins

    def copy_pair(self, d0: int, d1: int, s0: int, s1: int, comment: str = "") -> None:
        """d1:d0 = s1:s0, with one MOVW when both pairs are aligned."""
        if d0 % 2 == 0 and d1 == d0 + 1 and s0 % 2 == 0 and s1 == s0 + 1:
            self.movw(d0, s0, comment=comment)
        else:
            self.mov(d0, s0, comment=comment)
            self.mov(d1, s1)

    def label(self, name: str) -> None:
        if name in self._label_names:
            raise IsaError(f"label {name!r} defined twice")
        self._label_names.add(name)
        self.items.append(Label(name))
        # Control flow can join here from elsewhere: the carry state is no longer known.
        self._last_carry_writer = None

    def extend(self, other: Program) -> None:
        for item in other.items:
            if isinstance(item, Instr):
                self.emit(item.mnemonic, *item.operands, comment=item.comment)
            elif isinstance(item, Label):
                self.label(item.name)
            else:
                self.items.append(item)

    # --- facts ---
    @property
    def instructions(self) -> list[Instr]:
        return [i for i in self.items if isinstance(i, Instr)]

    @property
    def size(self) -> int:
        return sum(i.size for i in self.instructions)

    def static_cycles(self, core: str = "avre+") -> int | None:
        """Cycles of code whose path does not depend on data: straight-line code, including
        unconditional jumps and subroutine calls inside the program, followed as the core executes
        them (a subroutine costs once per call).  None if the program has a conditional branch or
        skip, or leaves the program (then only simulation knows)."""
        items = self.items
        where = {item.name: k for k, item in enumerate(items) if isinstance(item, Label)}
        total, k, returns = 0, 0, []
        seen: set[tuple[int, tuple[int, ...]]] = set()  # (jump target, return stack)
        while k < len(items):
            item = items[k]
            k += 1
            if not isinstance(item, Instr):
                continue
            c = item.cycles(core)
            if c is None:
                return None
            total += c
            if item.mnemonic in ("rjmp", "jmp", "rcall", "call"):
                target = where.get(item.operands[0])
                if target is None:
                    return None
                if item.mnemonic in ("rcall", "call"):
                    returns.append(k)
                k = target
                state = (k, tuple(returns))
                if state in seen or len(returns) > _MAX_CALL_DEPTH:
                    return None  # without conditional branches this never ends
                seen.add(state)
            elif item.mnemonic == "ret":
                if not returns:
                    return total  # returns from the function itself
                k = returns.pop()
        return total

    def class_counts(self) -> Counter[str]:
        return Counter(i.klass for i in self.instructions)

    @property
    def registers_written(self) -> frozenset[int]:
        out: set[int] = set()
        for ins in self.instructions:
            out |= ins.writes
        return frozenset(out)

    def render(self) -> list[str]:
        return [item.render() for item in self.items]


class PointerWindow:
    """Access bytes `base[0..]` through Y or Z with LDD/STD, moving the pointer when a displacement
    leaves 0..63 (operands beyond 64 bytes).  Tracks the pointer's current offset from the base."""

    def __init__(self, p: Program, ptr: str, offset: int = 0) -> None:
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
        delta = offset - self.offset
        lo = {"Y": 28, "Z": 30}[self.ptr]
        if 0 < delta <= 63:
            self.p.adiw(lo, delta, comment=f"{self.ptr} -> base+{offset}")
        elif -63 <= delta < 0:
            self.p.sbiw(lo, -delta, comment=f"{self.ptr} -> base+{offset}")
        elif delta:
            neg = (-delta) & 0xFFFF
            self.p.subi(lo, neg & 0xFF, comment=f"{self.ptr} -> base+{offset}")
            self.p.sbci(lo + 1, neg >> 8)
        self.offset = offset

    def load(self, reg: int, index: int, comment: str = "") -> None:
        self.p.ldd(reg, self.mem(index), comment=comment)

    def store(self, index: int, reg: int, comment: str = "") -> None:
        self.p.std(self.mem(index), reg, comment=comment)
