"""The one error type users see: its message is a single line naming the problem and the fix;
and how a run that is stopped (Ctrl-C, SIGTERM, SIGHUP) ends: one line and its status."""

from __future__ import annotations

import signal
import sys


class AvrmpError(Exception):
    """A problem the user can fix; the CLI prints it on one line and exits with `status`."""

    status = 2  # bad input to the command


class RoutineFailed(AvrmpError):
    """The routine under test computes a wrong result or crashes (status 1, as a failed
    verification)."""

    status = 1


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised where the program is, so that temporary folders and
    half-written files are cleaned up on the way out as on Ctrl-C."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_terminated(signum, frame) -> None:
    """The SIGTERM and SIGHUP handler of the command."""
    raise Terminated(signum)


def catch_stop_signals() -> dict:
    """raise_terminated for SIGTERM and SIGHUP, except where the signal is ignored (`nohup avrmp
    bench &` keeps running when its terminal closes); returns the handlers it replaced."""
    return {s: signal.signal(s, raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)
            if signal.getsignal(s) is not signal.SIG_IGN}


def stopped(stop: BaseException) -> int:
    """For Ctrl-C (KeyboardInterrupt), SIGTERM or SIGHUP (Terminated): print the one line, give
    the status (130, 143, 129)."""
    if isinstance(stop, Terminated):
        print("avrmp: terminated" if stop.signum == signal.SIGTERM else "avrmp: hung up",
              file=sys.stderr)
        return 128 + stop.signum
    print("avrmp: interrupted", file=sys.stderr)
    return 130
