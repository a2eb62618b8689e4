"""The program builder: a list of checked instructions, labels and phase comments, plus metrics.

Kernels call `p.mul(a, b)`, `p.adc(d, r)`, `p.ldd(d, Mem("Y", disp=3))` and so on; every call builds
an `Instr` (which checks the operands) and appends it.  The builder also refuses a carry consumed after
a MUL clobbered it: `add; mul; adc` is a silent bug on AVR, because MUL writes C.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..target.avr.isa import OPS, Instr, IsaError
from .cycles import static_cycles
from .items import Comment, Label

Item = Instr | Label | Comment

# Python keywords and builtins that are also mnemonics get a trailing underscore: p.and_, p.or_, p.in_.
ALIASES = {"and_": "and", "or_": "or", "in_": "in"}


class Emitter:
    """What every instruction list offers kernels: `p.adc(d, r)` and friends for each mnemonic,
    phase comments and fresh label names.  Subclasses provide `items`, `labels_made` and `emit`."""

    items: list
    labels_made: int

    def emit(self, mnemonic: str, *operands: object, comment: str = ""):
        raise NotImplementedError

    def __getattr__(self, name: str) -> Callable[..., object]:
        mnemonic = ALIASES.get(name, name)
        if mnemonic not in OPS:
            raise AttributeError(name)
        return lambda *ops, comment="": self.emit(mnemonic, *ops, comment=comment)

    def comment(self, text: str) -> None:
        self.items.append(Comment(text))

    def phase(self, text: str) -> None:
        """A named phase of the algorithm, rendered as `; --- text ---`."""
        self.items.append(Comment(f"--- {text} ---"))

    label_prefix = ""  # keeps this code's fresh labels apart from code it is joined with

    def new_label(self, hint: str) -> str:
        self.labels_made += 1
        return f"{self.label_prefix}{hint}{self.labels_made}"


class Program(Emitter):
    """An instruction sequence under construction."""

    def __init__(self, label_prefix: str = "") -> None:
        self.items: list[Item] = []
        self.last_carry_writer: Instr | None = None
        self.label_prefix = label_prefix
        self.labels_made = 0
        self.label_names: set[str] = set()

    # --- emission ---
    def emit(self, mnemonic: str, *operands: object, comment: str = "") -> Instr:
        ins = Instr.make(mnemonic, *operands, comment=comment)
        last = self.last_carry_writer
        if ins.reads_carry and last is not None and last.mnemonic.startswith("mul"):
            raise IsaError(f"{mnemonic} would consume the carry clobbered by the preceding MUL")
        if ins.writes_carry:
            self.last_carry_writer = ins
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
        if name in self.label_names:
            raise IsaError(f"label {name!r} defined twice")
        self.label_names.add(name)
        self.items.append(Label(name))
        # Control flow can join here from elsewhere: the carry state is no longer known.
        self.last_carry_writer = None

    def append(self, item: Item) -> None:
        """An item of another program: an instruction checked again (a carry across a MUL),
        a label registered again (no name twice)."""
        if isinstance(item, Instr):
            self.emit(item.mnemonic, *item.operands, comment=item.comment)
        elif isinstance(item, Label):
            self.label(item.name)
        else:
            self.items.append(item)

    def extend(self, other: Program) -> None:
        for item in other.items:
            self.append(item)

    def relax_calls(self) -> None:
        """CALL and JMP to a label of this program that RCALL and RJMP reach (2K words either
        way) become RCALL and RJMP, a word and a cycle fewer each.  Reach is measured before
        any is shortened: shortening only brings labels closer, so every one stays in reach."""
        at, words = {}, 0  # label -> word offset; the word offset after each item
        ends = []
        for item in self.items:
            if isinstance(item, Label):
                at[item.name] = words
            elif isinstance(item, Instr):
                words += item.words
            ends.append(words)
        near = {"call": "rcall", "jmp": "rjmp"}
        for i, item in enumerate(self.items):
            if isinstance(item, Instr) and item.mnemonic in near and item.operands[0] in at \
                    and -2048 <= at[item.operands[0]] - ends[i] <= 2047:
                self.items[i] = Instr.make(near[item.mnemonic], *item.operands,
                                           comment=item.comment)

    # --- facts ---
    @property
    def instructions(self) -> list[Instr]:
        return [i for i in self.items if isinstance(i, Instr)]

    @property
    def size(self) -> int:
        return sum(i.size for i in self.instructions)

    def static_cycles(self, core: str = "avre", nominal: bool = False,
                      pc_bytes: int = 2) -> int | None:
        """The cost model's cycles (see cycles.static_cycles)."""
        return static_cycles(self.items, core, nominal, pc_bytes)

    def class_counts(self) -> Counter[str]:
        return Counter(i.klass for i in self.instructions)

    @property
    def registers_written(self) -> frozenset[int]:
        out: set[int] = set()
        for ins in self.instructions:
            out |= ins.writes
        return frozenset(out)
