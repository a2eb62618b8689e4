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
    except ImportError as error:  # a native module that stops loading turns the stop into this
        stop = _stop_behind(error)
        if stop is None:
            raise
        return stopped(stop)


def _stop_behind(error: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or Terminated that caused error, if one did."""
    seen = error
    while seen is not None:
        if isinstance(seen, (KeyboardInterrupt, Terminated)):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
