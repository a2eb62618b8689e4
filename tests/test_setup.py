"""The fresh-machine script `run` installs the package unless everything it needs imports already:
its check must name every dependency in pyproject.toml, or a machine that lacks only one of them
skips the install and fails later."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
IMPORT_NAMES = {"pyelftools": "elftools", "pytest-xdist": "xdist"}  # where the two names differ


def required_modules() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] + project["optional-dependencies"]["test"]
    names = {re.match(r"[A-Za-z0-9_.-]+", spec).group(0) for spec in specs}
    return {IMPORT_NAMES.get(name, name) for name in names}


def test_run_checks_every_dependency_before_skipping_the_install():
    check = re.search(r"-c 'import (os, sys, avrmp, [^\n]*)", (REPO / "run").read_text())
    assert check, "run no longer checks its imports"
    checked = {name.strip() for name in check.group(1).split(",")}
    assert required_modules() <= checked, required_modules() - checked
