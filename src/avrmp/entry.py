"""The `avrmp` command.  Its modules take a moment to load; Ctrl-C, SIGTERM or SIGHUP in that
moment ends it as later (one line, status 130, 143 or 129), not with a traceback or without a
word."""

from __future__ import annotations

import signal

from .errors import Terminated, raise_terminated, stopped


def run() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):  # (cli.main sets them again while it runs)
        signal.signal(signum, raise_terminated)
    try:
        from .cli import main
        return main()
    except (KeyboardInterrupt, Terminated) as stop:
        return stopped(stop)
