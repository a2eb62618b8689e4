"""Where a routine's cycles go: the simulator's cycles at each instruction of the core, summed by
the phase the generated assembly names in its comments (`; --- name ---`, under the level
headers `; === name ===`).

The host (host.c, flag 4) adds up the cycles spent at each instruction address between
core_begin and core_end; the firmware's line table (the routine is assembled with one) gives the
source line of each address, and the source the phase that line belongs to.  The phases add up
to the core cycles by construction, so the profile is the simulator's count, split.
"""

from __future__ import annotations

import bisect
import random
import re
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from ..errors import AvrmpError, RoutineFailed
from ..spec import operand_count, result_bytes
from .inputs import oracle
from .simulator import Call, run_batch
from .toolchain import Firmware

_PHASE = re.compile(r"^\s*;\s*---\s*(.*?)\s*-*\s*$")
_LEVEL = re.compile(r"^\s*;\s*===\s*(.*?)\s*=*\s*$")
_FUNCTION = re.compile(r"^\s*\.type\s+[\w.$]+\s*,\s*[@%]function\b")
NO_PHASE = "(no phase comment)"
LEVEL_SETUP = "(the level's set-up)"  # code under a level header, before its first phase


@dataclass(frozen=True)
class Run:
    """Consecutive instructions of one phase, in code order; `level` is the header above it."""

    level: str
    phase: str
    cycles: int


@dataclass(frozen=True)
class Profile:
    core_cycles: int
    runs: tuple[Run, ...]  # in code order (for straight-line code, the order they execute)
    seed: int

    def by_phase(self) -> list[tuple[str, int, int]]:
        """(phase, cycles, how many runs) over the whole routine, the costliest first."""
        total: dict[str, list[int]] = {}
        for r in self.runs:
            entry = total.setdefault(r.phase, [0, 0])
            entry[0] += r.cycles
            entry[1] += 1
        return sorted(((k, c, n) for k, (c, n) in total.items()), key=lambda t: -t[1])


def phase_of_lines(source: str) -> list[tuple[str, str]]:
    """(level, phase) of every line of an assembly source (index 0 is line 1)."""
    level, phase, out = "", NO_PHASE, []
    for line in source.splitlines():
        if m := _LEVEL.match(line):
            level, phase = m.group(1), LEVEL_SETUP
        elif m := _PHASE.match(line):
            phase = m.group(1)
        elif _FUNCTION.match(line):  # another function: the phases above are not its own
            level, phase = "", NO_PHASE
        out.append((level, phase))
    return out


def line_table(elf: Path, source_name: str) -> tuple[list[int], list[int]]:
    """Addresses and source lines of the firmware's line-table rows for one source file, sorted
    by address."""
    with open(elf, "rb") as f:
        e = ELFFile(f)
        if not e.has_dwarf_info():
            raise AvrmpError(f"{elf.name} has no line table: build it with build_firmware")
        dwarf = e.get_dwarf_info()
        rows = []
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            names = [Path(entry.name.decode()).name for entry in program["file_entry"]]
            base = 1 if program.header.version < 5 else 0
            for entry in program.get_entries():
                s = entry.state
                if s is not None and not s.end_sequence and 0 <= s.file - base < len(names) \
                        and names[s.file - base] == source_name:
                    rows.append((s.address, s.line))
    rows.sort()
    return [a for a, _ in rows], [ln for _, ln in rows]


def profile_firmware(fw: Firmware, asm: Path, op: str, nbytes: int, seed: int | None = None,
                     int_args: tuple[int, ...] = ()) -> Profile:
    """The core's cycles by phase on one random input (seed None: a fresh one, recorded);
    `int_args` follow the pointers, as in verify_firmware.  A wrong result is an error: the
    cycles of a routine that computes something else mean nothing."""
    seed = random.randrange(1 << 32) if seed is None else seed
    rng = random.Random(seed)
    operands = tuple(rng.randbytes(nbytes) for _ in range(operand_count(op)))
    (m,) = run_batch(fw, [Call(operands, result_bytes(op, nbytes), int_args, profile=True)])
    if m.error:
        raise RoutineFailed(f"the routine failed in the simulator: {m.error}")
    if m.result != oracle(op, nbytes, operands):
        raise RoutineFailed(f"the routine's result is wrong on the profiled input (seed {seed}): "
                         "check it with avrmp verify (a run-time length needs --len-arg)")
    phases = phase_of_lines(asm.read_text(errors="replace"))
    addrs, lines = line_table(fw.elf, asm.name)
    runs: list[Run] = []
    for pc, cycles in sorted(m.profile):
        i = bisect.bisect_right(addrs, pc) - 1
        level, phase = phases[lines[i] - 1] if i >= 0 and lines[i] <= len(phases) \
            else ("", NO_PHASE)
        if runs and (runs[-1].level, runs[-1].phase) == (level, phase):
            runs[-1] = Run(level, phase, runs[-1].cycles + cycles)
        else:
            runs.append(Run(level, phase, cycles))
    counted = sum(r.cycles for r in runs)
    if counted != m.core_cycles:  # the host counts exactly the span it measures
        raise AvrmpError(f"the profile's {counted} cycles are not the {m.core_cycles} core "
                         "cycles measured: report this with the routine")
    return Profile(m.core_cycles, tuple(runs), seed)


def format_profile(symbol: str, prof: Profile) -> str:
    """The profile as text: every run in code order under its level header, then by phase."""
    total = prof.core_cycles
    head = (f"{symbol}: {total} core cycles on one random input (seed {prof.seed}), by phase "
            "in code order (cycles, share of the core):")
    out = [head]
    level = None
    for r in prof.runs:
        if r.level != level:
            level = r.level
            if level:
                out.append(f"  {level}")
        out.append(f"    {r.cycles:8d} {100 * r.cycles / total:5.1f} %  {r.phase}")
    out.append("by phase (cycles, share, runs):")
    for phase, cycles, n in prof.by_phase():
        out.append(f"  {cycles:8d} {100 * cycles / total:5.1f} % {n:4d}  {phase}")
    return "\n".join(out)
