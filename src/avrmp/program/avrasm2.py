"""The AVRASM2 text of a program (Microchip Studio's assembler; avra reads it too): the same
instructions and comments as the GNU as text, labels without GNU's local .L prefix, made unique
by a prefix (an AVRASM2 project is one assembly unit)."""

from __future__ import annotations

from collections.abc import Iterable

from .gnu_as import instruction_text
from .items import Comment, Label


def render(items: Iterable, prefix: str) -> list[str]:
    """The items as AVRASM2 lines; local label L becomes prefix_L."""
    def label(name: str) -> str:
        return f"{prefix}_{name}"

    out = []
    for item in items:
        if isinstance(item, Label):
            out.append(f"{label(item.name)}:")
        elif isinstance(item, Comment):
            out.append(f"\t; {item.text}")
        else:
            out.append(instruction_text(item, label))
    return out
