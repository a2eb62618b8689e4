"""`python -m avrmp`: the `avrmp` command, for a checkout that is not installed."""

import sys

from .entry import run

sys.exit(run())
