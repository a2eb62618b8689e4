"""Generated Karatsuba code never loads a memory byte whose value a register still holds (the
allocator reuses the register, or the combination takes the byte it loaded before): checked on
the straight-line stretches of the generated assembly, conservatively (a store through another
pointer, ST, PUSH, a label, a branch or a call forgets what is known)."""

from __future__ import annotations

import re

import pytest

from avrmp.routine.generate import generate
from avrmp.spec import Spec

POINTER_OF = {26: "X", 27: "X", 28: "Y", 29: "Y", 30: "Z", 31: "Z"}
LOW_OF = {"X": 26, "Y": 28, "Z": 30}
NO_REGISTER_WRITTEN = {"out", "cli", "sei", "nop", "bst", "cp", "cpc", "cpi", "tst", "push", "st",
                       "std"}
CONTROL = re.compile(r"(br[a-z]{2}|rjmp|jmp|r?call|icall|ijmp|ret|reti)\b")


def written_registers(op: str, args: list[str]) -> list[int]:
    if op == "mul":
        return [0, 1]
    if op in ("movw", "adiw", "sbiw"):
        return [int(args[0][1:]), int(args[0][1:]) + 1]
    out = [] if op in NO_REGISTER_WRITTEN or not args or not args[0].startswith("r") \
        else [int(args[0][1:])]
    if op in ("ld", "st"):  # a pre-decrement or post-increment moves the pointer
        ref = args[1] if op == "ld" else args[0]
        if ref != ref.strip("+-"):
            out.append(LOW_OF[ref.strip("+-")])
    return out


def redundant_loads(asm: str) -> list[str]:
    """LDDs of a byte (pointer + displacement) that a register holds unchanged since it was
    loaded from or stored to that byte (another register, or the same one again)."""
    held: dict[tuple[str, int], int] = {}  # (pointer, displacement) -> register holding it
    found = []

    def forget(reg: int) -> None:
        for key in [k for k, r in held.items() if r == reg or k[0] == POINTER_OF.get(reg)]:
            del held[key]

    for line in asm.splitlines():
        code = line.split(";")[0].strip()
        if code.endswith(":") or CONTROL.match(code):
            held.clear()
            continue
        if not code or code.startswith("."):  # a directive
            continue
        op, _, rest = code.partition(" ")
        args = [a.strip() for a in rest.split(",")] if rest else []
        if op in ("std", "ldd"):
            ref, reg = (args[0], args[1]) if op == "std" else (args[1], args[0])
            ptr, disp = re.fullmatch(r"([YZ])\+(\d+)", ref).groups()
            key, r = (ptr, int(disp)), int(reg[1:])
            if op == "std":  # another pointer may reach the same byte
                held = {k: v for k, v in held.items() if k[0] == ptr}
            else:
                if key in held:
                    found.append(line.strip())
                forget(r)
            held[key] = r
            continue
        if op in ("st", "sts", "push"):
            held.clear()
        for reg in written_registers(op, args):
            forget(reg)
    return found


def code(*lines: str) -> str:
    return "".join(f"\t{line}\n" for line in lines)


def test_the_check_finds_a_reload_of_a_held_byte() -> None:
    asm = code("ldd r4, Z+3", "add r5, r4", "ldd r6, Z+3", "ldd r7, Y+3", "std Y+1, r5",
               "ldd r8, Y+1", "std Z+9, r8", "ldd r9, Y+1")
    assert redundant_loads(asm) == ["ldd r6, Z+3", "ldd r8, Y+1"]


def test_the_check_forgets_what_is_overwritten() -> None:
    asm = code("ldd r4, Z+3", "inc r4", "ldd r6, Z+3",  # r4 changed
               "ldd r8, Y+1", "adiw r28, 1", "ldd r9, Y+1",  # Y moved
               "ldd r10, Z+5", "std Y+2, r11", "ldd r12, Z+5",  # Y may reach Z+5
               "ldd r13, Z+6", ".Lx:", "ldd r14, Z+6")  # a label
    assert redundant_loads(asm) == []


@pytest.mark.parametrize("op, bits, variant", [
    ("mul", 128, "branchfree"), ("mul", 128, "branched"), ("mul", 192, "branchfree"),
    ("mul", 192, "branched"), ("mul", 256, "branchfree"), ("mul", 256, "branched"),
    ("mul", 512, "branchfree"), ("sqr", 192, "branchfree"), ("sqr", 224, "branchfree"),
    ("sqr", 256, "branchfree"), ("sqr", 512, "branchfree"),
])
def test_generated_code_reloads_no_held_byte(op: str, bits: int, variant: str) -> None:
    asm = generate(Spec(op, bits, "karatsuba", variant=variant)).asm
    assert redundant_loads(asm) == []
