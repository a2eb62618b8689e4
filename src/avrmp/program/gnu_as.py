"""The GNU as (avr-gcc) text of a program: one instruction a line, local labels as .L<name>."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..target.avr.isa import REG_KINDS, Instr, op
from .items import Comment, Label


def local_label(name: str) -> str:
    return f".L{name}"


def operand_text(kind: str, value: object, label: Callable[[str], str] = local_label) -> str:
    if kind in REG_KINDS:
        return f"r{value}"
    if kind == "l":
        return label(value)
    return str(value)


def instruction_text(ins: Instr, label: Callable[[str], str] = local_label) -> str:
    """One instruction (a tab, the mnemonic, its operands, its comment); label: how a label
    operand is written."""
    kinds = op(ins.mnemonic).kinds
    ops = ", ".join(operand_text(k, v, label) for k, v in zip(kinds, ins.operands))
    text = f"\t{ins.mnemonic} {ops}" if ops else f"\t{ins.mnemonic}"
    return f"{text:<24}; {ins.comment}" if ins.comment else text


def item_text(item: Instr | Label | Comment) -> str:
    if isinstance(item, Label):
        return f"{local_label(item.name)}:"
    if isinstance(item, Comment):
        return f"\t; {item.text}"
    return instruction_text(item)


def render(items: Iterable) -> list[str]:
    return [item_text(item) for item in items]
