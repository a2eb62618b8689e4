"""The exact recolouring of allocated code (regalloc/recolor.py): MOV pairs become MOVWs, MOVs that
only moved a value vanish, and the renamed code computes the same as before."""

import ctypes
import itertools
import signal
import sys

import pytest

from avrmp.program.items import Label
from avrmp.program.program import Program
from avrmp.regalloc.recolor import ColouringMismatch, find_colours, recolor
from avrmp.target.avr.isa import Instr, Mem

POOL = range(2, 26)
LIVE_AT_END = frozenset(range(32)) - set(POOL)


def run(items, regs: dict[int, int], t: bool = False) -> dict[int, int]:
    """The stores of a little straight-line or T-branching program: Z+q -> byte."""
    r, mem, carry, k = [0] * 32, {}, 0, 0
    for reg, value in regs.items():
        r[reg] = value
    where = {it.name: n for n, it in enumerate(items) if isinstance(it, Label)}
    while k < len(items):
        it, k = items[k], k + 1
        if not isinstance(it, Instr):
            continue
        m, o = it.mnemonic, it.operands
        if m == "mul":
            r[0], r[1] = (r[o[0]] * r[o[1]]) & 0xFF, (r[o[0]] * r[o[1]]) >> 8
        elif m in ("add", "adc"):
            s = r[o[0]] + r[o[1]] + (carry if m == "adc" else 0)
            r[o[0]], carry = s & 0xFF, s >> 8
        elif m == "mov":
            r[o[0]] = r[o[1]]
        elif m == "movw":
            r[o[0]], r[o[0] + 1] = r[o[1]], r[o[1] + 1]
        elif m == "clr":
            r[o[0]] = 0
        elif m == "std":
            mem[o[0].disp] = r[o[1]]
        elif m == "ldd":
            r[o[0]] = 0x5A + o[1].disp
        elif m == "brts":
            k = where[o[0]] if t else k
        elif m == "rjmp":
            k = where[o[0]]
    return mem


def same_effect(before, after, inputs) -> bool:
    return all(run(before, dict(zip(inputs, v)), t) == run(after, dict(zip(inputs, v)), t)
               for v in itertools.product((0, 1, 0x7F, 0xFF), repeat=len(inputs))
               for t in (False, True))


def recoloured(items) -> list:
    """The code with its best colouring, found and then applied as a build does."""
    return recolor(items, POOL, LIVE_AT_END, find_colours(items, POOL, LIVE_AT_END))


def program(*lines) -> list:
    p = Program()
    for line in lines:
        if isinstance(line, str):
            p.label(line)
        else:
            p.emit(*line)
    return p.items


def test_a_mov_pair_becomes_a_movw():
    items = program(("clr", 10), ("mul", 26, 27), ("mov", 5, 0), ("mov", 6, 1),
                    ("add", 5, 10), ("std", Mem("Z", disp=0), 5), ("std", Mem("Z", disp=1), 6))
    out = recoloured(items)
    assert [i.mnemonic for i in out].count("mov") == 0
    assert [i.mnemonic for i in out].count("movw") == 1
    assert same_effect(items, out, (26, 27))


def test_a_mov_that_frees_a_pair_vanishes():
    items = program(("ldd", 3, Mem("Z", disp=2)), ("ldd", 4, Mem("Z", disp=3)),
                    ("add", 4, 3), ("mov", 9, 3),
                    ("mul", 26, 27), ("movw", 2, 0), ("add", 2, 9), ("add", 3, 4),
                    ("std", Mem("Z", disp=0), 2), ("std", Mem("Z", disp=1), 3))
    out = recoloured(items)
    assert [i.mnemonic for i in out].count("mov") == 0
    assert same_effect(items, out, (26, 27))


def test_registers_outside_the_pool_entry_values_and_arms_keep_their_moves():
    """A value there on entry keeps its register; in a signed arm no MOV is removed (both paths
    keep their cycles), though registers may be renamed."""
    items = program(("mul", 26, 27), ("mov", 5, 0), ("mov", 6, 1),
                    ("brts", "add_"), ("mov", 8, 7), ("add", 5, 8), ("rjmp", "join"),
                    "add_", ("mov", 8, 7), ("adc", 6, 8), "join",
                    ("std", Mem("Z", disp=0), 5), ("std", Mem("Z", disp=1), 6))
    out = recoloured(items)
    movs = [i for i in out if isinstance(i, Instr) and i.mnemonic == "mov"]
    assert len(movs) == 2 and all(i.operands[1] == 7 for i in movs)
    assert [i.mnemonic for i in out if isinstance(i, Instr)].count("movw") == 1
    assert same_effect(items, out, (7, 26, 27))


def test_nothing_to_gain_leaves_the_code_alone():
    items = program(("mul", 26, 27), ("movw", 4, 0), ("std", Mem("Z", disp=0), 5))
    assert find_colours(items, POOL, LIVE_AT_END) == ""
    assert recoloured(items) == items


def test_a_recorded_colouring_that_does_not_fit_is_refused():
    items = program(("clr", 10), ("mul", 26, 27), ("mov", 5, 0), ("mov", 6, 1),
                    ("add", 5, 10), ("std", Mem("Z", disp=0), 5), ("std", Mem("Z", disp=1), 6))
    colours = find_colours(items, POOL, LIVE_AT_END)
    with pytest.raises(ColouringMismatch):
        recolor(items, POOL, LIVE_AT_END, colours + "4")
    clash = colours[0] * len(colours)  # every value in one register
    with pytest.raises(ColouringMismatch):
        recolor(items, POOL, LIVE_AT_END, clash)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads glibc's sigaction")
def test_the_solver_leaves_the_sigint_handler_alone():
    """Python's SIGINT handler, as the C library holds it, is the same after a solve: Ctrl-C in
    a search ends avrmp in one line (status 130) rather than killing it or being ignored."""
    libc = ctypes.CDLL(None)

    def handler() -> int:
        action = ctypes.create_string_buffer(256)  # struct sigaction: the handler comes first
        assert libc.sigaction(signal.SIGINT, None, action) == 0
        return ctypes.c_void_p.from_buffer(action).value or 0

    before = handler()
    items = program(("clr", 10), ("mul", 26, 27), ("mov", 5, 0), ("mov", 6, 1),
                    ("add", 5, 10), ("std", Mem("Z", disp=0), 5), ("std", Mem("Z", disp=1), 6))
    assert find_colours(items, POOL, LIVE_AT_END)
    assert handler() == before
