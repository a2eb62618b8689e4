"""A generated routine rebuilt from its .S header alone: the spec line and the recorded choices."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from ..errors import AvrmpError
from ..spec import Spec
from ..techniques.registry import get_algorithm
from ..tuning.choices import BROKEN_RECORD_ERRORS, StaleChoices, parse
from .generate import generate
from .wrapper import Routine

SPEC_LINE = re.compile(r"^[;@] spec: (?P<fields>.*)$")  # AVR and ARM comment characters
INT_FIELDS = ("bits", "levels", "d", "e")
SPEC_FIELDS = {f.name for f in dataclasses.fields(Spec)} | {"length"}
REGENERATE = "regenerate with: "  # how a multi-routine file (avrmp uecc) names its command


def spec_fields(lines: list[str]) -> dict[str, str] | None:
    """The fields of the one spec line among lines, as written (None: no spec line, or a file of
    several routines); an AvrmpError for an unknown field or one given twice."""
    matches = [m for m in map(SPEC_LINE.match, lines) if m]
    if len(matches) != 1 or any(REGENERATE in line for line in lines):
        return None
    return _fields(matches[0])


def _fields(spec_line: re.Match) -> dict[str, str]:
    pairs = re.findall(r"(\w+)=(\S+)", spec_line["fields"])
    keys = [k for k, _ in pairs]
    if unknown := [k for k in keys if k not in SPEC_FIELDS]:
        raise AvrmpError(f"the spec line has an unknown field {unknown[0]!r} (avrmp writes "
                         f"{', '.join(sorted(SPEC_FIELDS))})")
    if twice := [k for k in keys if keys.count(k) > 1]:
        raise AvrmpError(f"the spec line gives {twice[0]} twice")
    return dict(pairs)


def spec_from_header(lines: list[str], path: Path) -> Spec:
    """The Spec written on a generated .S file's `; spec:` (ARM: `@ spec:`) line."""
    matches = [m for m in map(SPEC_LINE.match, lines) if m]
    if not matches:
        raise AvrmpError(f"{path} has no '; spec:' line: rebuild takes an AVR or ARM7TDMI .S "
                         "written by avrmp gen")
    if len(matches) > 1:  # avrmp uecc's file: several routines, one command that wrote them
        command = next((line.split(REGENERATE, 1)[1] for line in lines if REGENERATE in line),
                       "the command that wrote it")
        raise AvrmpError(f"{path} holds {len(matches)} routines, not one: make it again with "
                         f"{command}")
    try:
        fields = _fields(matches[0])
    except AvrmpError as e:
        raise AvrmpError(f"{path}: {e}") from None
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
    # ARM7TDMI generation makes no searched choices to record
    record = None if spec.target == "arm7tdmi" else recorded_choices(lines, path)
    try:
        return generate(spec, record=record)
    except (StaleChoices, *BROKEN_RECORD_ERRORS) as e:  # an edited or an older record
        detail = e.detail if isinstance(e, StaleChoices) else f"{type(e).__name__}: {e}"
        raise AvrmpError(f"{path}: its recorded choices do not fit its spec line ({detail}): "
                         "the spec line or the choices were edited, or another avrmp version "
                         "wrote the file; generate it again with avrmp gen") from None
    except AvrmpError as e:  # e.g. a spec line edited to options gen would refuse
        raise AvrmpError(f"{path}: {e}") from None


def recorded_choices(lines: list[str], path: Path) -> list:
    """The decisions on a generated AVR .S file's choices line, or a one-line error."""
    try:
        record = parse(lines)
    except ValueError as e:  # json.JSONDecodeError included
        raise AvrmpError(f"{path}: unreadable choices line ({e}): rebuild takes a .S written by "
                         "avrmp gen") from None
    if record is None:
        raise AvrmpError(f"{path} records no choices (written by an older avrmp?): generate it "
                         "again with avrmp gen")
    return record
