"""The avr-gcc calling convention, as far as generated routines meet it."""

from __future__ import annotations

# Where avr-gcc passes the pointer arguments (low register of each pair).
ARG_REGS = {"r": 24, "a": 22, "b": 20}
CALLEE_SAVED = frozenset(range(2, 18)) | {28, 29}
ZERO_REG = 1  # avr-gcc's zero register: must hold 0 on return

# Caller-saved registers first: every callee-saved register a kernel touches costs a PUSH/POP pair.
ALLOCATION_ORDER = [18, 19, 20, 21, 22, 23, 24, 25, *range(17, 1, -1)]
