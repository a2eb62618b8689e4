"""Find avr-gcc and build a test firmware: the user's routine plus a tiny call harness."""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..errors import AvrmpError
from ..routine.wrapper import c_header, signature
from ..spec import Spec
from .arm_toolchain import GCC as ARM_GCC

INSTALL_HINT = (
    "install gcc-avr binutils-avr avr-libc (apt-get install gcc-avr binutils-avr avr-libc)"
)

HARNESS_NAME = "__avrmp_harness.S"
ENTRY_SYMBOL = "__avrmp_entry"
DONE_SYMBOL = "__avrmp_done"
ISR_SYMBOL = "__avrmp_isr"
HARNESS_END_SYMBOL = "__avrmp_isr_end"  # the handler and the filler are the harness's last
FILLER_SYMBOL = "__avrmp_filler"
VECTORS_END_SYMBOL = "__avrmp_vectors_end"
# Sections the start-up code runs at reset (or at exit): code there is not the routine's to call.
STARTUP_SECTIONS = (".init", ".fini", ".ctors", ".dtors")

# Vector 1 is the harness's interrupt; the runner raises it (see runner_c/host.c, IRQ_VECTOR).
_HARNESS_TEMPLATE = """\
; avrmp test harness: calls {symbol} once, then stops.
#include <avr/io.h>
#ifdef __AVR_HAVE_JMP_CALL__
#define XJMP jmp
#define XCALL call
#else
#define XJMP rjmp
#define XCALL rcall
#endif
__SREG__ = 0x3f

    .section .vectors,"ax",@progbits
    .global __avrmp_vectors
__avrmp_vectors:
    XJMP {done}
    XJMP {isr}
    .org _VECTORS_SIZE      ; the part's whole table, so the routine's code and data lie where
    .global {vectors_end}   ; they do in a real program
{vectors_end}:

    .text
    .global {entry}
{entry}:
    XCALL {symbol}
    .global {done}
{done}:
    cli
    sleep
    rjmp {done}

; Interrupt handler: saves what it uses, scribbles 24 bytes of stack below
; its own frame (to destroy any data a routine left below SP), restores, RETI.
    .global {isr}
{isr}:
    push r0
    in r0, __SREG__
    push r0
    push r16
    push r17
    ldi r16, 0xA5
    ldi r17, 24
1:  push r16
    subi r16, 0x3B
    dec r17
    brne 1b
    ldi r17, 24
2:  pop r16
    dec r17
    brne 2b
    pop r17
    pop r16
    pop r0
    out __SREG__, r0
    pop r0
    reti
; Filler on a part over 64 KB: the routine's .text lies above 64 KB (above 128 KB on a part
; over 128 KB), as in a large program: LPM, ELPM with RAMPZ 0, ICALL without EIND fail here as
; there. (0xFFFF is a reserved encoding: a jump into it is refused.)
    .global {filler}
{filler}:
    .skip {filler_bytes}, 0xff
    .global {isr_end}
{isr_end}:
"""


@dataclass(frozen=True)
class Firmware:
    elf: Path
    mcu: str
    symbol: str
    entry: int  # byte address of the harness stub that calls the routine
    done: int  # byte address reached after the routine returns
    vectors_end: int  # byte address where the part's vector table ends
    harness_end: int  # byte address where the harness's code ends (the routine's follows)
    filler: int  # where the harness's filler begins (harness_end when there is none)
    core_begin: int | None
    core_end: int | None
    code_bytes: int
    core_code_bytes: int | None


def find_avr_gcc() -> str:
    """Path of avr-gcc, or AvrmpError with the install command."""
    path = shutil.which("avr-gcc")
    if path is None:
        raise AvrmpError(f"avr-gcc not found: {INSTALL_HINT}")
    return path


# The headers a C or Arduino program (Arduino.h includes them) may include before a routine's
# .h: its name must not be a macro, a function or a type of theirs
LIBC_HEADERS = ("stdint.h", "stddef.h", "stdlib.h", "string.h", "math.h")
AVR_HEADERS = ("avr/io.h", "avr/interrupt.h", "avr/pgmspace.h")
NAME_PROBE = "avrmp_name_probe"  # a name no header has: can the headers be compiled at all?


def refuse_clashing_name(spec: Spec) -> None:
    """AvrmpError unless spec's .h compiles after the C library's headers (and avr-libc's for
    the part), as C and as C++: --name PORTB, memcpy, M_PI or new does not. Nothing is asked
    where the compiler is absent (a machine that cannot build the routine either), nor for the
    ARM7TDMI where its C library (newlib) is not installed (no program there includes it)."""
    arm = spec.target == "arm7tdmi"
    gcc = shutil.which(ARM_GCC if arm else "avr-gcc")
    if gcc is None or not spec.name or _header_compiles(gcc, spec):
        return
    if not _header_compiles(gcc, dataclasses.replace(spec, name=NAME_PROBE)):
        if arm:
            return
        raise AvrmpError(f"avr-gcc cannot compile avr-libc's headers for {spec.mcu}: "
                         f"{INSTALL_HINT}")
    where = "the ARM7TDMI" if arm else spec.mcu
    raise AvrmpError(f"--name {spec.name}: a program for {where} that includes the C library's "
                     "headers could not declare it (a macro, function or type of the compiler's "
                     "or the library's, or a C++ keyword); choose another")


def _header_compiles(gcc: str, spec: Spec) -> bool:
    arm = spec.target == "arm7tdmi"
    headers = LIBC_HEADERS if arm else AVR_HEADERS + LIBC_HEADERS
    source = "".join(f"#include <{h}>\n" for h in headers) + c_header(
        spec.symbol, *signature(spec))
    part = "-mcpu=arm7tdmi" if arm else f"-mmcu={spec.mcu}"
    return all(subprocess.run([gcc, part, "-fsyntax-only", "-x", lang, "-"], input=source,
                              capture_output=True, text=True, check=False).returncode == 0
               for lang in ("c", "c++"))


def harness_text(symbol: str, filler_bytes: int = 0) -> str:
    return _HARNESS_TEMPLATE.format(
        symbol=symbol, entry=ENTRY_SYMBOL, done=DONE_SYMBOL, isr=ISR_SYMBOL,
        isr_end=HARNESS_END_SYMBOL, vectors_end=VECTORS_END_SYMBOL, filler=FILLER_SYMBOL,
        filler_bytes=filler_bytes)


LOW_FLASH = (0x10000, 0x20000)  # LPM's reach (64 KB), then ICALL/IJMP's (128 KB)
FILLER_SLACK = 2048  # vectors, harness, .progmem, .data's image: room kept beside the routine


def filler_bytes(flash: int, routine_bytes: int) -> int:
    """Flash between the harness and the routine: past each limit of LOW_FLASH the part has,
    as far as the routine (its allocated bytes) still fits above it."""
    room = flash - routine_bytes - FILLER_SLACK
    return max([0] + [low for low in LOW_FLASH if low < flash and low <= room])


@functools.cache
def flash_bytes(gcc: str, mcu: str) -> int:
    """The part's flash, as avr-libc's FLASHEND gives it."""
    out = _run([gcc, f"-mmcu={mcu}", "-dM", "-E", "-x", "assembler-with-cpp", "-"],
               source="#include <avr/io.h>\n")
    found = re.search(r"^#define FLASHEND (0x[0-9A-Fa-f]+|\d+)", out.stdout, re.MULTILINE)
    if found is None:
        raise AvrmpError(f"avr-libc names no FLASHEND for {mcu}: check the MCU name")
    return int(found[1], 0) + 1


_ERR_RE = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)?\s*(?:Error|error|fatal error):\s*(?P<msg>.*)$"
)


def _first_error(output: str, fallback: str) -> str:
    """One line: file:line: message: `source text`, from assembler/compiler output."""
    for raw in output.splitlines():
        m = _ERR_RE.match(raw.strip())
        if not m:
            continue
        fname, line, msg = m["file"], int(m["line"]), m["msg"].strip()
        text = ""
        try:
            lines = Path(fname).read_text(errors="replace").splitlines()
            if 1 <= line <= len(lines):
                text = lines[line - 1].strip()
        except OSError:
            pass
        where = f"{fname}:{line}"
        return f"{where}: {msg}" + (f": `{text}`" if text else "")
    for raw in output.splitlines():
        if raw.strip() and "Assembler messages" not in raw:
            return raw.strip()
    return fallback


def _run(cmd: list[str], source: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        # errors="replace": the assembler may quote bytes of a source that is not UTF-8
        return subprocess.run(cmd, input=source, capture_output=True, text=True,
                              errors="replace", check=False)
    except FileNotFoundError:
        raise AvrmpError(f"avr-gcc not found: {INSTALL_HINT}") from None


def _symbols(path: Path) -> list:
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        tab = elf.get_section_by_name(".symtab")
        if not isinstance(tab, SymbolTableSection):
            return []
        out = []
        for s in tab.iter_symbols():
            if not s.name:
                continue
            out.append(
                (
                    s.name,
                    s["st_value"],
                    s["st_size"],
                    s["st_info"]["bind"],
                    s["st_info"]["type"],
                    s["st_shndx"],
                )
            )
        return out


def _allocated_bytes(obj: Path) -> int:
    """The flash an object file takes: its allocated sections that hold bytes."""
    with obj.open("rb") as fh:
        return sum(sec["sh_size"] for sec in ELFFile(fh).iter_sections()
                   if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and sec["sh_type"] != "SHT_NOBITS")


def _section_end(path: Path, shndx: int) -> int | None:
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        sec = elf.get_section(shndx)
        return sec["sh_addr"] + sec["sh_size"]


def build_firmware(asm: Path, symbol: str, mcu: str, workdir: Path) -> Firmware:
    """Assemble `asm` with the call harness for `symbol` and link an ELF for `mcu`."""
    asm = Path(asm)
    workdir = Path(workdir)
    if not asm.is_file():
        raise AvrmpError(f"assembly file not found: {asm}: check the path")
    try:
        asm.read_bytes()
    except OSError as exc:
        raise AvrmpError(
            f"cannot read {asm}: {exc.strerror}: check the file's permissions"
        ) from None
    gcc = find_avr_gcc()
    workdir.mkdir(parents=True, exist_ok=True)
    user_obj = _assemble_user(gcc, asm, mcu, workdir)
    _check_symbol(user_obj, asm, symbol)
    # The harness in a folder of its own: a user's file of the same name cannot replace it.
    harness = workdir / "harness" / HARNESS_NAME
    harness.parent.mkdir(exist_ok=True)
    filler = filler_bytes(flash_bytes(gcc, mcu), _allocated_bytes(user_obj))
    harness.write_text(harness_text(symbol, filler))
    harness_obj = harness.with_suffix(".o")
    proc = _run([gcc, f"-mmcu={mcu}", "-c", str(harness), "-o", str(harness_obj)])
    if proc.returncode != 0:
        raise AvrmpError(
            f"harness failed to assemble for {mcu}: {_first_error(proc.stderr, 'avr-gcc failed')}: "
            "check the MCU name"
        )
    elf = workdir / f"{asm.stem}.{mcu}.elf"
    proc = _run(
        [gcc, f"-mmcu={mcu}", "-nostartfiles", str(harness_obj), str(user_obj), "-o", str(elf)]
    )
    if proc.returncode != 0:
        out = proc.stderr + proc.stdout
        first = next((ln.strip() for ln in out.splitlines() if ln.strip()), "avr-gcc failed")
        for ln in out.splitlines():
            if "undefined reference" in ln or "relocation truncated" in ln or "overflow" in ln:
                first = ln.strip()
                break
        raise AvrmpError(f"link failed for {asm} on {mcu}: {first}: fix the assembly source")
    _refuse_unloaded_sections(elf, asm)
    return _read_firmware(elf, mcu, symbol)


# The linked program's sections simavr loads (.text, .data) or that hold no bytes to load
LOADED_SECTIONS = (".text", ".data", ".bss", ".noinit")


def _refuse_unloaded_sections(elf: Path, asm: Path) -> None:
    """simavr loads only .text and .data into flash, .data's bytes right after .text: code or
    data the linker puts in a section of its own (.mycode, say, which avr-ld places where .data's
    bytes go) would be run or read as other bytes than the part's."""
    with elf.open("rb") as fh:
        names = [sec.name for sec in ELFFile(fh).iter_sections()
                 if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and sec["sh_size"]]
    bad = next((n for n in names if n not in LOADED_SECTIONS), None)
    if bad:
        raise AvrmpError(f"{asm} puts code or data in {bad}, which the linker makes a section "
                         "of its own that the simulator does not load: move it to .text (code "
                         "and PROGMEM tables) or .data")


def _assemble_user(gcc: str, asm: Path, mcu: str, workdir: Path) -> Path:
    """The user's .S assembled (through the C preprocessor) into an object file, with a line
    table (which source line each instruction comes from: `avrmp profile` reads it)."""
    user_obj = workdir / f"{asm.stem}.routine.o"
    # An absolute path: a file named -x.S is not taken for an option.
    proc = _run([gcc, f"-mmcu={mcu}", "-x", "assembler-with-cpp", "-Wa,--gdwarf-2",
                 f"-I{asm.parent}", "-c", str(asm.absolute()), "-o", str(user_obj)])
    if proc.returncode != 0:
        out = proc.stderr + proc.stdout
        if "device-specs" in out or "unknown MCU" in out \
                or ("unrecognized" in out and "mmcu" in out):
            raise AvrmpError(
                f"avr-gcc does not know MCU '{mcu}': use a name from `avr-gcc --target-help`"
            )
        raise AvrmpError(
            f"assembler error in {_first_error(out, 'avr-gcc failed')}: fix the assembly source"
        )
    _refuse_startup_code(user_obj, asm)
    return user_obj


def _refuse_startup_code(user_obj: Path, asm: Path) -> None:
    """A routine with code or data in a section the start-up code runs (.init4, say) would run
    at reset in a real program, where the harness (linked without start-up files) never runs
    it."""
    with user_obj.open("rb") as fh:
        names = [sec.name for sec in ELFFile(fh).iter_sections() if sec["sh_size"]]
    bad = next((n for n in names if n.startswith(STARTUP_SECTIONS)), None)
    if bad:
        raise AvrmpError(f"{asm} puts code or data in {bad}, which the start-up code runs at "
                         "reset: move it to .text")


def _check_symbol(user_obj: Path, asm: Path, symbol: str) -> None:
    """The routine's symbol must be defined and global in the user's object."""
    defined = [s for s in _symbols(user_obj)
               if s[5] != "SHN_UNDEF" and s[4] in ("STT_FUNC", "STT_NOTYPE")]
    match = [s for s in defined if s[0] == symbol]
    if not match:
        globals_ = sorted(
            {s[0] for s in defined if s[3] in ("STB_GLOBAL", "STB_WEAK") and "__core_" not in s[0]}
        )
        listing = ", ".join(globals_[:6]) if globals_ else "none"
        raise AvrmpError(
            f"symbol '{symbol}' not defined in {asm} (global symbols there: {listing}): "
            f"pass the routine's name or define it with .global {symbol}"
        )
    if not any(s[3] in ("STB_GLOBAL", "STB_WEAK") for s in match):
        raise AvrmpError(f"symbol '{symbol}' in {asm} is not global: add `.global {symbol}`")


def _read_firmware(elf: Path, mcu: str, symbol: str) -> Firmware:
    syms = _symbols(elf)
    by_name = {s[0]: s for s in syms}
    for need in (symbol, ENTRY_SYMBOL, DONE_SYMBOL, VECTORS_END_SYMBOL, HARNESS_END_SYMBOL,
                 FILLER_SYMBOL):
        if need not in by_name:
            raise AvrmpError(f"symbol '{need}' missing from linked {elf}: rebuild the firmware")
    sym = by_name[symbol]
    addr = sym[1]
    if sym[2]:
        code_bytes = sym[2]
    else:
        prefix = f"{symbol}__"
        later = [
            s[1]
            for s in syms
            if s[1] > addr
            and s[5] == sym[5]
            and not s[0].startswith(prefix)
            and (s[3] in ("STB_GLOBAL", "STB_WEAK") or s[4] == "STT_FUNC")
        ]
        end = min(later) if later else _section_end(elf, sym[5])
        code_bytes = (end or addr) - addr
    cb = by_name.get(f"{symbol}__core_begin")
    ce = by_name.get(f"{symbol}__core_end")
    core_begin = cb[1] if cb else None
    core_end = ce[1] if ce else None
    core_bytes = core_end - core_begin if core_begin is not None and core_end is not None else None
    if (core_begin is None) != (core_end is None):
        missing = f"{symbol}__core_end" if core_end is None else f"{symbol}__core_begin"
        raise AvrmpError(
            f"symbol '{missing}' missing in {elf}: define both core symbols or neither"
        )
    if core_begin is not None and not addr <= core_begin < core_end <= addr + code_bytes:
        raise AvrmpError(f"{symbol}__core_begin and {symbol}__core_end must lie inside {symbol}, "
                         "begin before end: the core cycles are timed between them")
    return Firmware(
        elf=elf,
        mcu=mcu,
        symbol=symbol,
        entry=by_name[ENTRY_SYMBOL][1],
        done=by_name[DONE_SYMBOL][1],
        vectors_end=by_name[VECTORS_END_SYMBOL][1],
        harness_end=by_name[HARNESS_END_SYMBOL][1],
        filler=by_name[FILLER_SYMBOL][1],
        core_begin=core_begin,
        core_end=core_end,
        code_bytes=code_bytes,
        core_code_bytes=core_bytes,
    )
