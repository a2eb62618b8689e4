"""Tuning: search routines' choices and record them in the tuned table (avrmp tune)."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from functools import partial
from multiprocessing import Pool
from pathlib import Path

from ..progress import progress_bar
from ..spec import Spec
from ..tuning import table
from ..tuning.choices import BROKEN_RECORD_ERRORS, Decision, StaleChoices
from .generate import generate, search, table_key


def _searched(spec: Spec, jitter: int = 0) -> tuple[str, list[Decision]]:
    return table_key(spec), search(spec, jitter)


def tune(specs: Sequence[Spec], path: Path = table.TABLE, jobs: int = 1,
         progress: bool = True, jitter: int = 0) -> dict[str, list[Decision]]:
    """Search every spec (one key once) and add the decisions to the table at path, saving as
    results come in so that an interrupted run keeps what it found; jitter: jittered
    allocations tried per block (see karatsuba/search.py)."""
    table.require_readable(path)
    unique = list({table_key(s): s for s in specs}.values())
    found: dict[str, list[Decision]] = {}
    bar = progress_bar(enabled=progress, total=len(unique), desc="tune", unit="routine")
    for key, decisions in _results(unique, jobs, jitter):
        found[key] = decisions
        table.save({key: decisions}, path)
        bar.update()
    bar.close()
    return found


def untuned(specs: Sequence[Spec], path: Path = table.TABLE) -> list[Spec]:
    """The specs whose table entry is missing or stale (recorded by an older generator: its
    replay is refused), so that `avrmp tune --missing` searches only those."""
    def current(spec: Spec) -> bool:
        record = table.lookup(table_key(spec), path)
        if record is None:
            return False
        try:
            generate(spec, record=record)
        except (StaleChoices, *BROKEN_RECORD_ERRORS):  # a record that no longer replays
            return False
        return True

    return [s for s in specs if not current(s)]


def _results(specs: list[Spec], jobs: int, jitter: int):
    """(key, decisions) for each spec: in this process (searches share their caches), or in
    `jobs` processes."""
    searched = partial(_searched, jitter=jitter)
    jobs = min(jobs, len(specs))  # no idle workers
    if jobs <= 1:
        yield from map(searched, specs)
        return
    # The workers are forked with WORKER_SIGNALS blocked, so that none reaches one before
    # _quiet_worker has set its handlers (it would run the parent's and print a traceback); the
    # parent takes a signal that came meanwhile once they are unblocked again.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, WORKER_SIGNALS)
    try:
        pool = Pool(jobs, initializer=_quiet_worker)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    with pool:  # leaving it terminates the workers
        yield from pool.imap(searched, specs)


WORKER_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _quiet_worker() -> None:
    """A worker leaves Ctrl-C and a hang-up to the parent and ends on the parent's terminate()
    (SIGTERM) without a traceback of its own (forked with all three blocked: unblocked once
    set)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WORKER_SIGNALS)
