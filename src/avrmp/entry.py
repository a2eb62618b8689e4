"""The `avrmp` command.  Its modules take a moment to load; Ctrl-C, SIGTERM or SIGHUP in that
moment ends it as later (one line, status 130, 143 or 129), not with a traceback or without a
word."""

from __future__ import annotations

from .errors import Terminated, catch_stop_signals, stopped


def run() -> int:
    catch_stop_signals()  # (cli.main sets them again while it runs)
    try:
        from .cli import main
        return main()
    except (KeyboardInterrupt, Terminated) as stop:
        return stopped(stop)
