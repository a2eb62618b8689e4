"""Run a whole firmware (an example, a C harness) in simavr's command-line simulator and read
what it prints on its first UART.  The firmware ends with `cli; sleep`, on which simavr stops."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ..errors import AvrmpError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_serial(elf: Path, mcu: str, timeout: float = 120, f_cpu: int = 16_000_000) -> list[str]:
    """The lines the firmware writes to UART0.  simavr reports each line on stderr, coloured,
    its newline shown as a final '.'; other stderr lines (simavr's own) are dropped."""
    simavr = shutil.which("simavr")
    if simavr is None:
        raise AvrmpError("simavr not found: install it (apt-get install simavr)")
    try:
        proc = subprocess.run([simavr, "-m", mcu, "-f", str(f_cpu), str(elf)],
                              capture_output=True, text=True, errors="replace", timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise AvrmpError(f"{elf} did not stop within {timeout} s in simavr: it must end with "
                         "cli; sleep") from None
    lines = []
    for raw in proc.stderr.splitlines():
        if "\x1b[32m" in raw:  # simavr's UART output colour
            lines.append(_ANSI.sub("", raw).removesuffix("."))
    return lines
