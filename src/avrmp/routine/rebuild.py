"""A generated routine rebuilt from its .S header alone: the spec line and the recorded choices."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import AvrmpError
from ..spec import Spec
from ..techniques.registry import get_algorithm
from ..tuning.choices import parse
from .generate import generate
from .wrapper import Routine

SPEC_LINE = re.compile(r"^[;@] spec: (?P<fields>.*)$")  # AVR and ARM comment characters
INT_FIELDS = ("bits", "levels", "d", "e")


def spec_from_header(lines: list[str], path: Path) -> Spec:
    """The Spec written on a generated .S file's `; spec:` (ARM: `@ spec:`) line."""
    match = next((m for m in map(SPEC_LINE.match, lines) if m), None)
    if match is None:
        raise AvrmpError(f"{path} has no '; spec:' line: rebuild takes a .S written by avrmp gen")
    fields = dict(re.findall(r"(\w+)=(\S+)", match["fields"]))
    fields.pop("length", None)  # "run-time argument": the code is the same for every length
    try:
        if "bits" not in fields:
            fields["bits"] = 8 * get_algorithm(fields["algo"]).max_bytes
        for key in INT_FIELDS:
            if key in fields:
                fields[key] = int(fields[key])
        if "looped" in fields:
            fields["looped"] = fields["looped"] == "True"
        return Spec(**fields)
    except (KeyError, TypeError, ValueError, AvrmpError) as e:
        raise AvrmpError(f"{path}: unreadable spec line ({e}): rebuild takes a .S written by "
                         "avrmp gen") from None


def rebuild(path: Path) -> Routine:
    """The routine the .S at path was generated as, from its header alone (no search)."""
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise AvrmpError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    spec = spec_from_header(lines, path)
    if spec.target == "arm7tdmi":
        return generate(spec)  # its generator makes no searched choices to record
    try:
        record = parse(lines)
    except ValueError as e:  # json.JSONDecodeError included
        raise AvrmpError(f"{path}: unreadable choices line ({e}): rebuild takes a .S written by "
                         "avrmp gen") from None
    if record is None:
        raise AvrmpError(f"{path} records no choices (written by an older avrmp?): generate it "
                         "again with avrmp gen")
    try:
        return generate(spec, record=record)
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise AvrmpError(f"{path}: its recorded choices do not fit its spec ({type(e).__name__}: "
                         f"{e}); generate it again with avrmp gen") from None
