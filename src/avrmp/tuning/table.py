"""The committed table of tuned choices: for each routine the benchmark catalog (and the tests)
build, the decisions its search made, so that generating it again only replays them.

Keys name a build (tuning.table_key in routine.generate); values are decision trees
(Decision.to_json).  `avrmp tune` writes entries; never edit the file by hand.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ..errors import AvrmpError
from ..output_files import write_atomic
from .choices import Decision

TABLE = Path(__file__).with_name("tuned.json")


@functools.cache
def _load(path: Path) -> dict[str, list]:
    try:
        table = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise _unreadable(path, str(e)) from None
    if not isinstance(table, dict) or not all(isinstance(v, list) for v in table.values()):
        raise _unreadable(path, "not an object of decision lists")
    return table


def _unreadable(path: Path, why: str) -> AvrmpError:
    if Path(path).resolve() == TABLE.resolve():  # the package's own
        fix = "restore it with git or rebuild it with avrmp tune --catalog"
    else:
        fix = "give another --table or remove this file"
    return AvrmpError(f"cannot read the tuned table {path}: {why}: {fix}")


def require_readable(path: Path = TABLE) -> None:
    """An AvrmpError now if the table at path exists but cannot be read: before a search whose
    results would go into it, not after."""
    _load.cache_clear()
    _load(path)


def lookup(key: str, path: Path = TABLE) -> list[Decision] | None:
    """The recorded decisions for a build, or None if the table has none."""
    entry = _load(path).get(key)
    try:
        return None if entry is None else [Decision.from_json(d) for d in entry]
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise _unreadable(path, f"its entry {key} is malformed ({e})") from None


def save(entries: dict[str, list[Decision]], path: Path = TABLE) -> None:
    """Add or replace entries (written atomically, keys sorted, one entry a line).  The table is
    read again first, so entries another `avrmp tune` wrote meanwhile are kept."""
    _load.cache_clear()
    table = dict(_load(path))
    table.update({k: [d.to_json() for d in v] for k, v in entries.items()})
    lines = [f"  {json.dumps(k)}: {json.dumps(table[k], separators=(',', ':'))}"
             for k in sorted(table)]
    write_atomic(path, "{\n" + ",\n".join(lines) + "\n}\n")
    _load.cache_clear()
