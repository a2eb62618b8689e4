"""What a program holds besides instructions: labels and comments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Label:
    name: str


@dataclass(frozen=True)
class Comment:
    text: str
