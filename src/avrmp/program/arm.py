"""ARM7TDMI programs: the builder (instructions checked as they are emitted, against the target's
one table) and their GNU as text for arm-none-eabi-gcc."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import AvrmpError
from ..target.arm7tdmi.isa import BLOCK_MODES, OPS, TIMINGS, WORST_M
from .items import Comment, Label

PC, LR, SP = 15, 14, 13


def reg_text(r: int) -> str:
    return {SP: "sp", LR: "lr", PC: "pc"}.get(r, f"r{r}")


def reg_list(regs: Iterable[int]) -> str:
    return "{" + ", ".join(reg_text(r) for r in sorted(regs)) + "}"


@dataclass(frozen=True)
class ArmInstr:
    mnemonic: str
    text: str  # the operands as written
    writes: frozenset[int]
    reads: frozenset[int]
    registers: int = 1  # registers a block transfer moves
    comment: str = ""

    @property
    def timing(self) -> str:
        return OPS[self.mnemonic].timing

    def cycles(self, m: int = WORST_M) -> int:
        return TIMINGS[self.timing].cycles(m, self.registers)


class ArmProgram:
    """Instructions, labels and phase comments, in order."""

    def __init__(self) -> None:
        self.items: list[ArmInstr | Label | Comment] = []

    # --- items -------------------------------------------------------------------------------
    def phase(self, text: str) -> None:
        self.items.append(Comment(f"--- {text} ---"))

    def label(self, name: str) -> None:
        self.items.append(Label(name))

    def _add(self, mnemonic: str, text: str, writes: Iterable[int], reads: Iterable[int],
             registers: int = 1, comment: str = "") -> None:
        writes, reads = frozenset(writes), frozenset(reads)
        if PC in writes | reads or (SP in writes | reads and mnemonic not in ("push", "pop")):
            raise AvrmpError(f"internal: {mnemonic} {text}: sp and pc are not data registers")
        self.items.append(ArmInstr(mnemonic, text, writes, reads, registers, comment))

    # --- data processing ---------------------------------------------------------------------
    def alu(self, mnemonic: str, rd: int, rn: int, operand: int | str, comment: str = "") -> None:
        """rd = rn OP operand; operand: a register, an immediate (int), or a register with a
        shift by an immediate ("r3, lsl #16")."""
        if OPS[mnemonic].timing != "data" or mnemonic in ("mov", "mvn", "cmp", "cmn"):
            raise AvrmpError(f"internal: {mnemonic} is not a three-operand data instruction")
        if isinstance(operand, int):
            reads, text = {rn, operand}, reg_text(operand)
        else:
            reads, text = {rn, _shifted_register(operand)}, operand
        self._add(mnemonic, f"{reg_text(rd)}, {reg_text(rn)}, {text}", {rd}, reads,
                  comment=comment)

    def alu_imm(self, mnemonic: str, rd: int, rn: int, value: int, comment: str = "") -> None:
        """rd = rn OP #value (value must be an ARM immediate)."""
        _check_immediate(value)
        self._add(mnemonic, f"{reg_text(rd)}, {reg_text(rn)}, #{value}", {rd}, {rn},
                  comment=comment)

    def mov(self, rd: int, operand: str, comment: str = "", mnemonic: str = "mov") -> None:
        """rd = a register shifted by an immediate ("r3, lsr #16"); mnemonic "mvn": its
        complement."""
        self._add(mnemonic, f"{reg_text(rd)}, {operand}", {rd}, {_shifted_register(operand)},
                  comment=comment)

    def mov_imm(self, rd: int, value: int, comment: str = "") -> None:
        _check_immediate(value)
        self._add("mov", f"{reg_text(rd)}, #{value}", {rd}, (), comment=comment)

    def add_if_carry(self, rd: int, value: int, comment: str = "") -> None:
        """rd += value when the carry flag is set: one cycle taken or not, no branch."""
        _check_immediate(value)
        self._add("addcs", f"{reg_text(rd)}, {reg_text(rd)}, #{value}", {rd}, {rd},
                  comment=comment)

    # --- multiplies --------------------------------------------------------------------------
    def umull(self, lo: int, hi: int, rm: int, rs: int, comment: str = "") -> None:
        self._long_multiply("umull", lo, hi, rm, rs, (rm, rs), comment)

    def umlal(self, lo: int, hi: int, rm: int, rs: int, comment: str = "") -> None:
        """(hi:lo) += rm * rs; the carry out of the 64 bits is lost: the caller keeps
        (hi:lo) + rm * rs below 2^64."""
        self._long_multiply("umlal", lo, hi, rm, rs, (lo, hi, rm, rs), comment)

    def _long_multiply(self, mnemonic, lo, hi, rm, rs, reads, comment) -> None:
        if len({lo, hi, rm}) != 3:  # ARMv4: RdLo, RdHi and Rm must differ
            raise AvrmpError(f"internal: {mnemonic} needs RdLo, RdHi and Rm distinct")
        self._add(mnemonic, ", ".join(map(reg_text, (lo, hi, rm, rs))), {lo, hi}, reads,
                  comment=comment)

    # --- memory ------------------------------------------------------------------------------
    def ldr(self, rd: int, base: int, offset: int = 0, post: int | None = None,
            comment: str = "") -> None:
        self._add("ldr", f"{reg_text(rd)}, {_address(base, offset, post)}",
                  {rd} | ({base} if post else set()), {base}, comment=comment)

    def str_(self, rs: int, base: int, offset: int = 0, post: int | None = None,
             comment: str = "") -> None:
        self._add("str", f"{reg_text(rs)}, {_address(base, offset, post)}",
                  {base} if post else set(), {rs, base}, comment=comment)

    def block(self, load: bool, mode: str, base: int, regs: Sequence[int], writeback: bool,
              comment: str = "") -> None:
        """LDM/STM<mode> base[!], {regs}: the lowest register meets the lowest address."""
        if mode not in BLOCK_MODES or not regs or len(set(regs)) != len(regs):
            raise AvrmpError(f"internal: block transfer {mode} {regs}")
        if load and base in regs:
            raise AvrmpError("internal: a load-multiple may not load its own base register")
        mnemonic = ("ldm" if load else "stm") + mode
        text = f"{reg_text(base)}{'!' if writeback else ''}, {reg_list(regs)}"
        data = set(regs)
        self._add(mnemonic, text, (data if load else set()) | ({base} if writeback else set()),
                  {base} | (set() if load else data), len(regs), comment)

    def push(self, regs: Sequence[int]) -> None:
        self._add("push", reg_list(regs), {SP}, set(regs) | {SP}, len(regs))

    def pop(self, regs: Sequence[int]) -> None:
        self._add("pop", reg_list(regs), set(regs) | {SP}, {SP}, len(regs))

    def bx_lr(self) -> None:
        self.items.append(ArmInstr("bx", "lr", frozenset(), frozenset({LR})))

    # --- facts -------------------------------------------------------------------------------
    @property
    def instructions(self) -> list[ArmInstr]:
        return [i for i in self.items if isinstance(i, ArmInstr)]

    @property
    def size(self) -> int:
        return 4 * len(self.instructions)

    @property
    def registers_written(self) -> frozenset[int]:
        return frozenset().union(*(i.writes for i in self.instructions))

    def static_cycles(self, m: int = WORST_M) -> int:
        """Cycles of the straight-line program with every multiply taking m steps."""
        return sum(i.cycles(m) for i in self.instructions)

    def class_counts(self) -> dict[str, int]:
        return dict(Counter(i.mnemonic for i in self.instructions))

    def extend(self, other: ArmProgram) -> None:
        self.items.extend(other.items)


def _shifted_register(operand: str) -> int:
    """The register of a shifted-register operand such as "r3, lsr #16"."""
    return int(operand.split(",")[0].strip()[1:])


def _address(base: int, offset: int, post: int | None) -> str:
    if post is not None:
        return f"[{reg_text(base)}], #{post}"
    return f"[{reg_text(base)}, #{offset}]" if offset else f"[{reg_text(base)}]"


def _check_immediate(value: int) -> None:
    """An ARM data-processing immediate: eight bits rotated right by an even amount."""
    v = value & 0xFFFF_FFFF
    if not any(((v << r) | (v >> (32 - r))) & 0xFFFF_FFFF < 256 for r in range(0, 32, 2)):
        raise AvrmpError(f"internal: {value:#x} is not an ARM immediate")


def render(items: Iterable) -> list[str]:
    """GNU as lines: one instruction a line, comments after @."""
    lines = []
    for item in items:
        if isinstance(item, Label):
            lines.append(f".L{item.name}:")
        elif isinstance(item, Comment):
            lines.append(f"\t@ {item.text}")
        else:
            text = f"\t{item.mnemonic} {item.text}"
            lines.append(f"{text:<32}@ {item.comment}" if item.comment else text)
    return lines
