"""What an ARM7TDMI technique returns: the body between the core labels, and notes for the
header.  Pointers arrive as the AAPCS passes them: r0 = result, r1 = a, r2 = b."""

from __future__ import annotations

from dataclasses import dataclass

from ...program.arm import ArmProgram

RESULT, A_PTR, B_PTR = 0, 1, 2
# Registers a kernel may use besides the pointers: sp and pc are never data.
FREE = (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14)


@dataclass(frozen=True)
class ArmKernel:
    body: ArmProgram
    notes: tuple[str, ...] = ()
