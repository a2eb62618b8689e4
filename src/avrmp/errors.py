"""The one error type users see: its message is a single line naming the problem and the fix."""


class AvrmpError(Exception):
    """A problem the user can fix; the CLI prints it on one line and exits with status 2."""
