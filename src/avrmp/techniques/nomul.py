"""Lowering for cores without a hardware multiplier (ATtiny): every `mul ra, rb` becomes a
constant-time shift-and-add that leaves r1:r0 = ra * rb, exactly as MUL would.

The sequence has no branches or skips: each multiplier bit is turned into a mask with `sbc m, m`
(0x00 or 0xFF from the carry) and `and m, ra`, so every input takes the same instructions, cycles and
data addresses.  It is applied once, to the kernel body, by `generate()`; kernels need not know.

    mov  r0, rb          ; r0 = multiplier, shifted out bit by bit as the product shifts in
    lsr  r0              ; C = bit 0
    8 x { sbc m, m ; and m, ra ; add r1, m ; ror r1 ; ror r0 }   (first add is a mov + lsr)

Scratch registers: `m` (and `s`, the multiplicand, when the sequence is a subroutine) are taken from
the registers the body never touches.  If there are too few, each site saves and restores what it borrows with
PUSH/POP, which keeps it constant-time at 8 more cycles.

Small bodies get the sequence inline (42 cycles per MUL); when inlining would make the core larger
than INLINE_BUDGET bytes, the body calls one shared subroutine instead (`mov s, ra; mov r0, rb;
rcall` + 43 + RET: 53 cycles per MUL, 3 words per site).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import AvrmpError
from ..program.gnu_as import instruction_text
from ..program.items import Label
from ..program.program import Program
from ..target.avr.isa import Instr
from .kernel import Kernel

INLINE_BUDGET = 2048
SEQ_WORDS = 42  # mov + lsr + 8 steps of 5
RCALL_REACH = 2047  # words either way

# Caller-saved first (free of PUSH/POP in the wrapper), then callee-saved.
_SCRATCH_ORDER = [18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 30, 31, *range(17, 1, -1), 28, 29]


def _referenced(body: Program) -> set[int]:
    regs: set[int] = set()
    for ins in body.instructions:
        regs |= ins.reads | ins.writes
    return regs


def _steps(p: Program, ra: int, m: int) -> None:
    """The 8 multiply steps after `mov r0, rb; lsr r0`: r1:r0 = ra * rb."""
    for bit in range(8):
        p.sbc(m, m, comment="m = -(multiplier bit)" if bit == 0 else "")
        p.and_(m, ra)
        if bit == 0:
            p.mov(1, m)
            p.lsr(1)
        else:
            p.add(1, m)
            p.ror(1)
        p.ror(0)


def _check_operands(ins: Instr) -> None:
    ra, rb = ins.operands
    if {ra, rb} & {0, 1}:
        raise AvrmpError(f"cannot lower `{instruction_text(ins).strip()}` without MUL: r0/r1 as an operand")


def lower(kernel: Kernel) -> Kernel:
    """The kernel with every MUL replaced by the constant-time sequence."""
    body = kernel.body
    muls = [i for i in body.instructions if i.mnemonic == "mul"]
    if any(i.mnemonic in ("muls", "mulsu") for i in body.instructions):
        raise AvrmpError("signed multiplications (MULS/MULSU) cannot be lowered for a core "
                         "without MUL: choose an unsigned algorithm")
    if not muls:
        return kernel
    for ins in muls:
        _check_operands(ins)
    used = _referenced(body)
    free = [r for r in _SCRATCH_ORDER if r not in used]
    inline = body.size + len(muls) * (2 * SEQ_WORDS - 2) <= INLINE_BUDGET
    out = Program()
    sub = out.new_label("mul8") if not inline else ""
    # The subroutine's registers: m (mask) and s (multiplicand), the same at every call site.
    m, s = (free + [r for r in _SCRATCH_ORDER if r not in free])[:2]
    for item in body.items:
        if not isinstance(item, Instr) or item.mnemonic != "mul":
            out.append(item)
            continue
        ra, rb = item.operands
        if inline:
            scratch = free[:1]
            borrowed: list[int] = []
            if not scratch:  # save and restore a register the body uses
                scratch = [next(r for r in _SCRATCH_ORDER if r not in (ra, rb))]
                borrowed = scratch
        else:
            scratch = [m, s]
            borrowed = [r for r in scratch if r not in free]
        for r in borrowed:
            out.push(r)
        note = item.comment or f"r1:r0 = r{ra}*r{rb}"
        if inline:
            out.mov(0, rb, comment=f"{note} (shift-and-add, no MUL)")
            out.lsr(0)
            _steps(out, ra, scratch[0])
        else:
            out.mov(0, rb, comment=f"{note} (no MUL)")
            out.mov(scratch[1], ra)
            out.rcall(sub)
        for r in reversed(borrowed):
            out.pop(r)
    if not inline:
        end = out.new_label("mul8_end")
        out.rjmp(end)
        out.phase("r1:r0 = s * r0 by shift and add, constant time (no MUL on this core)")
        out.label(sub)
        out.lsr(0)
        _steps(out, s, m)
        out.ret()
        out.label(end)
        _check_reach(out, sub)
    out = relax_branches(out)
    notes = [*kernel.notes, f"no MUL: {len(muls)} multiplications lowered to shift-and-add "
             + ("inline" if inline else "subroutine calls")]
    return replace(kernel, body=out, notes=notes)


def _check_reach(p: Program, sub: str) -> None:
    pos, where, calls = 0, 0, []
    for item in p.items:
        if isinstance(item, Label) and item.name == sub:
            where = pos
        elif isinstance(item, Instr):
            if item.mnemonic == "rcall":
                calls.append(pos)
            pos += item.words
    if any(abs(where - c) > RCALL_REACH for c in calls):
        raise AvrmpError("the routine is too large for a shared no-MUL multiply subroutine "
                         "(RCALL reaches 4 KB): choose --looped or a smaller size")


_INVERSE = {"brne": "breq", "breq": "brne", "brcc": "brcs", "brcs": "brcc", "brts": "brtc",
            "brtc": "brts", "brpl": "brmi", "brmi": "brpl", "brlo": "brsh", "brsh": "brlo"}


def relax_branches(p: Program) -> Program:
    """Rewrite conditional branches whose target lies beyond -64..+63 words (the expansion can push
    a loop's body out of reach) as the inverse branch over an RJMP.  Control flow, and so the
    constant-time property, is unchanged."""
    while True:
        pos, labels, branches = 0, {}, []
        for k, item in enumerate(p.items):
            if isinstance(item, Label):
                labels[item.name] = pos
            elif isinstance(item, Instr):
                if item.mnemonic in _INVERSE:
                    branches.append((k, pos))
                pos += item.words
        far = {k for k, at in branches
               if not -64 <= labels[p.items[k].operands[0]] - (at + 1) <= 63}
        if not far:
            return p
        out = Program()
        for k, item in enumerate(p.items):
            if k in far:
                skip = out.new_label("near")
                out.emit(_INVERSE[item.mnemonic], skip, comment=item.comment)
                out.rjmp(item.operands[0])
                out.label(skip)
            else:
                out.append(item)
        p = out
