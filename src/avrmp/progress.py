"""Progress of long runs on stderr: a live bar on a terminal; in a log (CI, `bash run bench >
log 2>&1`) a plain line every LOG_EVERY seconds instead, so that a long run is seen to be alive
without filling the log with carriage returns. Short runs print nothing to a log."""

from __future__ import annotations

import sys

from tqdm import tqdm

LOG_EVERY = 60.0  # seconds between progress lines in a log


class _LogLines:
    """A file for tqdm that turns its redraws into whole lines and drops its clearing writes."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


class _LogBar(tqdm):
    """A bar for a log: a new postfix waits for the next timed line (on a terminal it is drawn at
    once; here that would print a line per item, or one before the first LOG_EVERY seconds)."""

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        super().set_postfix_str(s, refresh=False)

    def close(self) -> None:
        if getattr(self, "last_print_n", None) == self.n:
            self.leave = False  # its last line already shows the final count
        super().close()


def progress_bar(iterable=None, *, enabled: bool = True, **options) -> tqdm:
    """tqdm over iterable (or with total=...), shown as the stream's kind allows; enabled=False
    (a caller asked for quiet) shows nothing."""
    stream = sys.stderr
    if not enabled:
        return tqdm(iterable, disable=True, **options)
    if stream.isatty():
        return tqdm(iterable, file=stream, leave=False, **options)
    # miniters=1 and no maxinterval: a line is drawn only by an update, with its count (tqdm's
    # monitor thread would redraw an iterated bar with a stale one).
    return _LogBar(iterable, file=_LogLines(stream), delay=LOG_EVERY, mininterval=LOG_EVERY,
                   miniters=1, maxinterval=float("inf"), ascii=True, leave=True, **options)
