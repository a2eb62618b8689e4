"""C emitters for the 64-bit host target: one module per representation of seed 004 (radix64,
radix51, double_limbs), the shared text in common.  `emit(representation)` gives the .c and .h
of one representation; the text depends only on its arguments and avrmp's version."""

from __future__ import annotations

from ...target.host64 import REPRESENTATIONS
from ...target.host64 import representation as lookup
from .common import HostSource, check_prefix
from .double_limbs import double_source
from .radix51 import radix51_source
from .radix64 import radix64_source

__all__ = ["REPRESENTATIONS", "HostSource", "emit"]


def emit(representation: str, prefix: str | None = None) -> HostSource:
    """The C source of one representation ("radix64", "radix51" or "double"), its functions
    named prefix_from_bytes, ... (prefix defaults to avrmp_r64, avrmp_r51, avrmp_dbl; it is
    also the file stem).  AvrmpError for an unknown representation or a prefix that is not a C
    identifier."""
    rep = lookup(representation)
    name = check_prefix(rep.stem if prefix is None else prefix)
    build = {"radix64": radix64_source, "radix51": radix51_source, "double": double_source}
    return build[rep.name](rep, name)
