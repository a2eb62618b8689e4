"""Generated files on disk, written atomically: no half-written or half-replaced output on
failure."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ..errors import AvrmpError
from .wrapper import Routine


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename: `path` is either the whole new
    text or untouched.  OSError becomes AvrmpError (one line for the user)."""
    write_all({Path(path): text})


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_all(files: dict[Path, str]) -> None:
    """Write several files so that either all of them appear or none: each goes to a temporary file
    first (mode 0666 less the umask, like any file the user creates), then all are renamed."""
    temps: list[tuple[str, Path]] = []
    renamed: list[Path] = []
    current = next(iter(files), Path("."))
    try:
        for current, text in files.items():
            current.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=current.parent, prefix=f".{current.name}.")
            temps.append((tmp, current))
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o666 & ~_umask())
        for tmp, current in temps:
            os.replace(tmp, current)
            renamed.append(current)
    except BaseException as e:
        for tmp, _ in temps:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for path in renamed:  # no half of a pair left behind
            with contextlib.suppress(OSError):
                os.unlink(path)
        if isinstance(e, OSError):
            raise AvrmpError(
                f"cannot write {current}: {e.strerror}: choose a writable output path"
            ) from None
        raise


def write_routine(routine: Routine, outdir: Path) -> tuple[Path, Path]:
    sym = routine.spec.symbol
    asm, hdr = outdir / f"{sym}.S", outdir / f"{sym}.h"
    write_all({asm: routine.asm, hdr: routine.header})
    return asm, hdr
