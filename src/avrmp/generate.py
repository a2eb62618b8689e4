"""Spec -> Routine -> files on disk (written atomically: no half-written output on failure)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .abi import Routine, wrap
from .algorithms import get_algorithm
from .errors import AvrmpError
from .mcu import get_mcu
from .spec import Spec


def generate(spec: Spec) -> Routine:
    kernel = get_algorithm(spec.algo).build(spec)
    if not get_mcu(spec.mcu).has_mul:
        from .nomul import lower

        kernel = lower(kernel)  # each MUL -> constant-time shift-and-add
    routine = wrap(spec, kernel)
    flash = get_mcu(spec.mcu).flash_bytes
    if routine.code_bytes > flash:
        raise AvrmpError(
            f"{spec.symbol} needs {routine.code_bytes} bytes of flash but {spec.mcu} has {flash}: "
            "choose a looped or subquadratic algorithm, or a smaller size"
        )
    return routine


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_routine(routine: Routine, outdir: Path) -> tuple[Path, Path]:
    sym = routine.spec.symbol
    asm, hdr = outdir / f"{sym}.S", outdir / f"{sym}.h"
    try:
        write_atomic(asm, routine.asm)
        write_atomic(hdr, routine.header)
    except OSError as e:
        raise AvrmpError(f"cannot write to {outdir}: {e.strerror}") from None
    return asm, hdr
