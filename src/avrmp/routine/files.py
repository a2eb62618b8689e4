"""A generated routine's files: NAME.S (or NAME.asm) and NAME.h, written together."""

from __future__ import annotations

from pathlib import Path

from ..output_files import write_all
from ..spec import Spec
from .wrapper import Routine

DIALECTS = {"gnu": ".S", "avrasm2": ".asm"}  # assembler syntax -> file suffix


def asm_path(spec: Spec, outdir: Path, dialect: str = "gnu") -> Path:
    """Where write_routine puts the routine's assembly: NAME.S or NAME.asm."""
    return outdir / f"{spec.symbol}{DIALECTS[dialect]}"


def header_path(spec: Spec, outdir: Path) -> Path:
    """Where write_routine puts the routine's C header: NAME.h."""
    return outdir / f"{spec.symbol}.h"


def routine_paths(spec: Spec, outdir: Path, dialect: str = "gnu") -> tuple[Path, Path]:
    """Both files write_routine writes: the assembly and the C header."""
    return asm_path(spec, outdir, dialect), header_path(spec, outdir)


def write_routine(routine: Routine, outdir: Path, dialect: str = "gnu") -> tuple[Path, Path]:
    """NAME.S (GNU as) or NAME.asm (AVRASM2), and NAME.h, both or neither."""
    asm, hdr = routine_paths(routine.spec, outdir, dialect)
    write_all({asm: routine.text(dialect), hdr: routine.header})
    return asm, hdr
