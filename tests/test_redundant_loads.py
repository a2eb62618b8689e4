"""Generated Karatsuba code never loads a memory byte whose value a register still holds (the
allocator reuses the register, or the combination takes the byte it loaded before): checked on
the straight-line stretches of the generated assembly, conservatively (a store through another
pointer, ST, PUSH, a label, a branch or a call forgets what is known)."""

from __future__ import annotations

import re

import pytest

from avrmp.routine.generate import generate
from avrmp.spec import Spec
from avrmp.target.avr.isa import POINTER_OF, Mem, instr_effects

CONTROL = re.compile(r"(br[a-z]{2}|rjmp|jmp|r?call|icall|ijmp|ret|reti)\b")
MEMORY = re.compile(r"(-?)([XYZ])(\+?)(\d*)")


def operand(text: str) -> object:
    """An operand as the instruction table takes it: a register number, a Mem or a number."""
    if re.fullmatch(r"r\d+", text):
        return int(text[1:])
    m = MEMORY.fullmatch(text)
    if m is None:
        return int(text, 0)
    pre, ptr, post, disp = m.groups()
    return Mem(ptr, disp=int(disp)) if disp else Mem(ptr, "-" if pre else "+" if post else "")


def redundant_loads(asm: str) -> list[str]:
    """LDDs of a byte (pointer + displacement) that a register holds unchanged since it was
    loaded from or stored to that byte (another register, or the same one again).  What each
    instruction writes comes from the instruction table (target/avr/isa.py)."""
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
        if not code or code.startswith((".", "#")):  # a directive, the preprocessor's too
            continue
        op, _, rest = code.partition(" ")
        operands = tuple(operand(a.strip()) for a in rest.split(",")) if rest else ()
        if op in ("std", "ldd"):
            mem, reg = operands if op == "std" else operands[::-1]
            key = (mem.ptr, mem.disp)
            if op == "std":  # another pointer may reach the same byte
                held = {k: v for k, v in held.items() if k[0] == mem.ptr}
            else:
                if key in held:
                    found.append(line.strip())
                forget(reg)
            held[key] = reg
            continue
        if op in ("st", "sts", "push"):
            held.clear()
        for reg in instr_effects(op, operands)[1]:
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
