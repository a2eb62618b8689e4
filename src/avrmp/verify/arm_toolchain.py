"""Assemble and link an ARM7TDMI routine (ARM state) at a fixed address with arm-none-eabi-gcc,
and read what the emulator needs from the ELF: the loadable image, the entry, the core labels
and the routine's code bytes.

The generator brackets a routine's body without its push, pop and return by the labels
`SYMBOL__core_begin` and `SYMBOL__core_end`; without them the core is the whole routine."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.constants import P_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..errors import AvrmpError

GCC = "arm-none-eabi-gcc"
INSTALL_HINT = "apt-get install gcc-arm-none-eabi binutils-arm-none-eabi"
TEXT_ADDRESS = 0x0000_8000  # where the routine's .text is linked
CPU_FLAGS = ("-mcpu=arm7tdmi", "-marm")
ERROR_LINE = re.compile(r"^(?P<where>[^\s:][^:]*:\d+):(?:\d+:)?\s*(?:Error|error|fatal error):"
                        r"\s*(?P<msg>.*)$")


@dataclass(frozen=True)
class Segment:
    """Bytes loaded at an address (a PT_LOAD segment, zero-filled to its memory size)."""

    address: int
    data: bytes
    writable: bool


@dataclass(frozen=True)
class ArmFirmware:
    elf: Path
    symbol: str
    entry: int  # the routine's first instruction
    end: int  # past its last byte (entry + .size)
    core_begin: int | None  # SYMBOL__core_begin, if the routine has it
    core_end: int | None  # SYMBOL__core_end
    code: bytes  # the routine's bytes, entry to end
    segments: tuple[Segment, ...]

    @property
    def code_bytes(self) -> int:
        return len(self.code)

    @property
    def core(self) -> tuple[int, int]:
        """The address range [begin, end) whose cycles count as the core's."""
        if self.core_begin is None or self.core_end is None:
            return self.entry, self.end
        return self.core_begin, self.core_end


def find_arm_gcc() -> str:
    """Path of arm-none-eabi-gcc, or AvrmpError with the install command."""
    path = shutil.which(GCC)
    if path is None:
        raise AvrmpError(f"{GCC} not found: {INSTALL_HINT}")
    return path


def first_error(output: str, fallback: str) -> str:
    """The first error line of assembler or linker output, as `file:line: message`."""
    lines = [raw.strip() for raw in output.splitlines()]
    for line in lines:
        m = ERROR_LINE.match(line)
        if m:
            return f"{m['where']}: {m['msg'].strip()}"
    for line in lines:  # the linker names the cause on a line after "in function"
        if "undefined reference" in line:
            return line
    for line in lines:
        if line and "Assembler messages" not in line:
            return line
    return fallback


def run_tool(cmd: list[str], what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    except FileNotFoundError:
        raise AvrmpError(f"{GCC} not found: {INSTALL_HINT}") from None
    if proc.returncode != 0:
        detail = first_error(proc.stderr + proc.stdout, f"{GCC} exited with {proc.returncode}")
        raise AvrmpError(f"{what} failed: {detail}: fix the source and run again")


def build_arm(asm: Path, symbol: str, workdir: Path) -> ArmFirmware:
    """Assemble `asm` for the ARM7TDMI in ARM state, link it alone at TEXT_ADDRESS with no
    libraries, and read `symbol` from the ELF."""
    asm, workdir = Path(asm), Path(workdir)
    if not asm.is_file():
        raise AvrmpError(f"assembly file not found: {asm}: check the path")
    gcc = find_arm_gcc()
    workdir.mkdir(parents=True, exist_ok=True)
    obj, elf = workdir / f"{asm.stem}.arm.o", workdir / f"{asm.stem}.arm.elf"
    run_tool([gcc, *CPU_FLAGS, "-I", str(asm.parent), "-c", str(asm.absolute()), "-o", str(obj)],
             f"assembling {asm.name}")
    run_tool([gcc, *CPU_FLAGS, "-nostdlib", "-nostartfiles", f"-Wl,-Ttext=0x{TEXT_ADDRESS:x}",
              f"-Wl,-e,{symbol}", "-Wl,--no-warn-rwx-segments", "-o", str(elf), str(obj)],
             f"linking {asm.name}")
    return read_firmware(elf, symbol, source=asm)


def read_firmware(elf: Path, symbol: str, source: Path | None = None) -> ArmFirmware:
    """The firmware of `symbol` in a linked ELF (built from `source`, which errors name): entry,
    size, core labels, loadable image."""
    with Path(elf).open("rb") as fh:
        f = ELFFile(fh)
        table = f.get_section_by_name(".symtab")
        symbols = {}
        if isinstance(table, SymbolTableSection):
            symbols = {s.name: s for s in table.iter_symbols() if s.name}
        if symbol not in symbols or symbols[symbol]["st_shndx"] == "SHN_UNDEF":
            raise AvrmpError(f"symbol {symbol!r} not found in {source or elf}: give the "
                             "routine's name with --symbol (and .global it)")
        entry, size = symbols[symbol]["st_value"], symbols[symbol]["st_size"]
        if entry & 1:
            raise AvrmpError(f"{symbol} is a Thumb function: the ARM7TDMI target runs ARM "
                             "state; assemble it with .arm")
        if size == 0:  # no .size: to the end of its section
            section = f.get_section(symbols[symbol]["st_shndx"])
            size = section["sh_addr"] + section["sh_size"] - entry
        segments = tuple(Segment(p["p_vaddr"], p.data().ljust(p["p_memsz"], b"\0"),
                                 bool(p["p_flags"] & P_FLAGS.PF_W))
                         for p in f.iter_segments() if p["p_type"] == "PT_LOAD")

    def label(suffix: str) -> int | None:
        s = symbols.get(symbol + suffix)
        return None if s is None else s["st_value"]

    begin, end = label("__core_begin"), label("__core_end")
    if (begin is None) != (end is None) or (begin is not None and not
                                            entry <= begin <= end <= entry + size):
        raise AvrmpError(f"{symbol}__core_begin and {symbol}__core_end must both lie inside "
                         f"{symbol}, begin before end: fix the labels")
    code = b"".join(_slice(s, entry, entry + size) for s in segments)
    if len(code) != size:
        raise AvrmpError(f"{symbol}'s {size} bytes are not all in a loadable segment of "
                         f"{Path(elf).name}: put the routine in .text")
    return ArmFirmware(Path(elf), symbol, entry, entry + size, begin, end, code, segments)


def _slice(segment: Segment, begin: int, end: int) -> bytes:
    lo = max(begin, segment.address) - segment.address
    hi = min(end, segment.address + len(segment.data)) - segment.address
    return segment.data[lo:hi] if hi > lo else b""
