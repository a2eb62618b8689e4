"""blocks.carries.ParkedCarries: carry chains that run in turns get their own carries back.

Random schedules of three chains are emitted, register-allocated and run by a small interpreter
of the few instructions involved; at every change of chain the carry C holds is recorded (by
ADC into a cleared byte, stored), and each chain must see the carry it last left; at the end
two chains' carries are summed (join) and the others taken as bytes (take)."""

from __future__ import annotations

import random

import pytest

POOL = list(range(2, 32))


def _run(items) -> dict[int, int]:
    """Execute straight-line code of CLR/LDI/MOV/shifts/ADD/ADC/STD; returns the stores."""
    reg, c, stored = [0] * 32, 0, {}
    for it in items:
        m, ops = it.mnemonic, it.operands
        if m == "clr":
            reg[ops[0]] = 0
        elif m == "ldi":
            reg[ops[0]] = ops[1]
        elif m == "mov":
            reg[ops[0]] = reg[ops[1]]
        elif m == "lsr":
            c, reg[ops[0]] = reg[ops[0]] & 1, reg[ops[0]] >> 1
        elif m == "lsl":
            c, reg[ops[0]] = reg[ops[0]] >> 7, (reg[ops[0]] << 1) & 0xFF
        elif m == "rol":
            c, reg[ops[0]] = reg[ops[0]] >> 7, ((reg[ops[0]] << 1) | c) & 0xFF
        elif m == "ror":
            c, reg[ops[0]] = reg[ops[0]] & 1, (reg[ops[0]] >> 1) | (c << 7)
        elif m in ("add", "adc"):
            s = reg[ops[0]] + reg[ops[1]] + (c if m == "adc" else 0)
            reg[ops[0]], c = s & 0xFF, s >> 8
        elif m == "std":
            stored[ops[0].disp] = reg[ops[1]]
        else:
            raise AssertionError(f"the interpreter has no {m}")
    return stored


def _schedule(seed: int):
    """A VProgram running three chains in random turns, and the carries each probe must see."""
    from avrmp.blocks.carries import ParkedCarries
    from avrmp.regalloc.vprogram import VProgram
    from avrmp.target.avr.isa import Mem

    rng = random.Random(seed)
    vp = VProgram()
    zero = vp.v("zero")
    vp.clr(zero)
    carries = ParkedCarries(vp, zero)
    last: dict[str, int] = {}
    expect: dict[int, int] = {}
    slot = 0
    for _ in range(rng.randrange(4, 16)):
        name = rng.choice("ABC")
        low = rng.random() < 0.3
        carries.enter(name, fresh=name not in last, low=low and name in last)
        if name in last:  # C must hold this chain's carry now
            probe = vp.v("probe")
            vp.clr(probe)  # CLR keeps C
            vp.adc(probe, zero)
            vp.std(Mem("Z", disp=slot), probe)
            expect[slot], slot = last[name], slot + 1
        last[name] = rng.randrange(2)
        t = vp.v("t")
        vp.ldi(t, last[name])
        vp.lsr(t)  # the chain's new carry
        if rng.random() < 0.2:
            carries.park()  # before code that would change C
    names = sorted(last)
    if carries.in_c is not None and len(names) > 1:  # two chains end together: their sum
        ending = carries.in_c
        other = rng.choice([n for n in names if n != ending])
        vp.std(Mem("Z", disp=slot), carries.join(other))
        expect[slot], slot = last[other] + last[ending], slot + 1
        names = [n for n in names if n not in (ending, other)]
    for name in names:  # every other chain's last carry, as a register holding 0 or 1
        vp.std(Mem("Z", disp=slot), carries.take(name))
        expect[slot], slot = last[name], slot + 1
    return vp, expect


@pytest.mark.parametrize("seed", range(200))
def test_each_chain_gets_its_own_carry_back(seed) -> None:
    from avrmp.program.program import Program
    from avrmp.regalloc.allocator import allocate

    vp, expect = _schedule(seed)
    out = Program()
    allocate(vp, POOL, out)
    assert _run(out.instructions) == expect
