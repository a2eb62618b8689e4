"""Tuning: search routines' choices and record them in the tuned table (avrmp tune)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from ..spec import Spec
from ..tuning import table
from ..tuning.choices import Decision, parse
from .generate import generate, search, table_key


def _searched(spec: Spec) -> tuple[str, list[Decision]]:
    return table_key(spec), search(spec)


def tune(specs: Sequence[Spec], path: Path = table.TABLE, jobs: int = 1,
         progress: bool = True) -> dict[str, list[Decision]]:
    """Search every spec (one key once) and add the decisions to the table at path, saving as
    results come in so that an interrupted run keeps what it found."""
    unique = list({table_key(s): s for s in specs}.values())
    found: dict[str, list[Decision]] = {}
    bar = tqdm(total=len(unique), desc="tune", unit="routine", disable=not progress, leave=False)
    for key, decisions in _results(unique, jobs):
        found[key] = decisions
        table.save({key: decisions}, path)
        bar.update()
    bar.close()
    return found


def refresh(specs: Sequence[Spec], path: Path = table.TABLE, progress: bool = True) -> None:
    """Replay each spec's entry in the table and save the decisions the replay makes: an entry
    recorded before the generator added a decision (Choices.decide_late) gains it without a new
    search; the others are saved as they were."""
    for spec in tqdm(specs, desc="refresh", unit="routine", disable=not progress, leave=False):
        key = table_key(spec)
        record = table.lookup(key, path)
        if record is not None:
            made = parse(generate(spec, record=record).asm.splitlines())
            table.save({key: made}, path)


def _results(specs: list[Spec], jobs: int):
    """(key, decisions) for each spec: in this process (searches share their caches), or in
    `jobs` processes."""
    if jobs <= 1:
        yield from map(_searched, specs)
        return
    with ProcessPoolExecutor(jobs) as pool:
        yield from pool.map(_searched, specs)
