"""The `avrmp` command.  Its modules take a moment to load; Ctrl-C or SIGTERM in that moment
ends it as later (one line, status 130 or 143), not with a traceback or without a word."""

from __future__ import annotations

import signal

from .errors import Terminated, raise_terminated, stopped


def run() -> int:
    signal.signal(signal.SIGTERM, raise_terminated)  # (cli.main sets it again while it runs)
    try:
        from .cli import main
        return main()
    except (KeyboardInterrupt, Terminated) as stop:
        return stopped(stop)
