"""Files on disk, written atomically: no half-written or half-replaced output on failure, and
an unwritable output refused before a long run starts."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import AvrmpError


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write `text` to `path` through a temporary file and a rename: `path` is either the whole new
    text or untouched.  OSError becomes AvrmpError (one line for the user)."""
    write_all({Path(path): text})


def real_path(path: Path) -> Path:
    """The path with its links followed, as far as they lead (a loop of links is no error
    here, as Path.resolve makes it: require_writable names it)."""
    return Path(os.path.realpath(path))


def require_writable(path: Path, folder: bool = False) -> None:
    """Before a long run: fail now, in one line, if `path` (a file, or with `folder` a folder to
    write files in) cannot be written, not when the run's results are ready.  A probe file is
    written where the output goes and removed; folders made for it are removed too."""
    where = Path(path) if folder else Path(path).parent
    made = []  # the missing folders, deepest first
    p = where
    try:
        while not p.exists() and p != p.parent:
            made.append(p)
            p = p.parent
        if not folder and Path(path).is_dir():
            raise IsADirectoryError(21, "is a directory")
        if not folder:
            _refuse_kept(Path(path))
        if made and made[-1].is_symlink():
            raise FileNotFoundError(2, f"{made[-1]} is a link to nothing")
        for d in reversed(made):
            d.mkdir()
        fd, probe = tempfile.mkstemp(dir=where, prefix=".avrmp-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise AvrmpError(f"cannot write {path}: {e.strerror}: choose a writable output path"
                         ) from None
    finally:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()


def _refuse_kept(path: Path) -> None:
    """What a rename would replace unasked: a file the user made read-only (by its mode bits,
    which root's access() ignores), a device, a pipe or a socket (not a file to replace), a
    link to nothing or a loop of links."""
    if path.is_symlink() and not path.exists():
        raise FileNotFoundError(2, "it is a link to nothing (or a loop of links)")
    if not path.exists():
        return
    if not path.is_file():
        raise PermissionError(1, "it is not a regular file (a device, a pipe or a socket)")
    if not path.stat().st_mode & 0o222 or not os.access(path, os.W_OK):
        raise PermissionError(13, "it is read-only")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_all(files: dict[Path, str | bytes]) -> None:
    """Write several files so that either all of them appear or none, and a file that was
    there before is either replaced or left as it was: each goes to a temporary file first (with
    the mode of the file it replaces, else 0666 less the umask, like any file the user creates),
    then all are renamed, the files they replace kept aside until every rename has worked.  A
    path that is a symbolic link is written through it: the file it points to gets the text,
    the link stays; a link to nothing is refused (_refuse_kept), not followed."""
    temps: list[tuple[str, Path]] = []
    replaced: list[tuple[Path, str | None]] = []  # (path, its former content's name, if any)
    current = next(iter(files), Path("."))
    try:
        for current, text in files.items():
            if current.is_dir():
                raise IsADirectoryError(21, "is a directory")
            _refuse_kept(current)
            current = real_path(current) if current.is_symlink() else current
            if current.parent.exists() and not current.parent.is_dir():
                raise NotADirectoryError(20, f"{current.parent} is not a directory")
            current.parent.mkdir(parents=True, exist_ok=True)
            mode = current.stat().st_mode & 0o7777 if current.exists() else 0o666 & ~_umask()
            fd, tmp = tempfile.mkstemp(dir=current.parent, prefix=f".{current.name}.")
            temps.append((tmp, current))
            with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
                f.write(text)
            os.chmod(tmp, mode)
        for tmp, current in temps:
            replaced.append((current, _keep_aside(current)))
            os.replace(tmp, current)
    except BaseException as e:
        _undo(temps, replaced)
        if isinstance(e, OSError):
            raise AvrmpError(
                f"cannot write {current}: {e.strerror}: choose a writable output path"
            ) from None
        raise
    for _, aside in replaced:
        if aside:
            with contextlib.suppress(OSError):
                os.unlink(aside)


def _keep_aside(path: Path) -> str | None:
    """A hard link to the file at path (None if there is none), to put it back on failure."""
    if not path.is_file():
        return None
    aside = tempfile.mktemp(dir=path.parent, prefix=f".{path.name}.old.")
    os.link(path, aside)
    return aside


def _undo(temps: list[tuple[str, Path]], replaced: list[tuple[Path, str | None]]) -> None:
    """No temporary file left, no half of a pair, the user's former files back."""
    for tmp, _ in temps:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    for path, aside in reversed(replaced):
        with contextlib.suppress(OSError):
            if aside:
                os.replace(aside, path)
            else:
                os.unlink(path)
        if aside:  # a rename onto the same file does nothing: the link may still be there
            with contextlib.suppress(OSError):
                os.unlink(aside)
