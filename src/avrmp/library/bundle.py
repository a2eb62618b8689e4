"""The library bundle (avrmp bundle): a folder that the Arduino IDE, PlatformIO or a Makefile takes
as it is.

    DIR/library.properties     Arduino library metadata
    DIR/library.json           PlatformIO library metadata
    DIR/README.md              each routine's cycles, bytes and stack, measured on two parts
    DIR/src/avrmp.h            the umbrella header
    DIR/src/avrmp_OPBITS.S/.h  one routine each: mul and sqr (the fastest the picker finds),
                               add and sub (ripple), at every size
    DIR/examples/multiply/multiply.ino

Every routine is verified on the parts of its family before anything is written, and the example
is built with the Arduino flags for the family's boards and, where a board has a serial port, run
in simavr: its printed product must be right.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from pathlib import Path

from .. import __version__
from ..bench.pick import fastest
from ..errors import AvrmpError
from ..output_files import require_writable, write_all
from ..progress import progress_bar
from ..routine.generate import generate, has_room
from ..routine.wrapper import Routine
from ..target.avr.parts import get_mcu
from ..verify.checks import Report, sram_fits, verify_file
from ..verify.serial import run_serial
from .arduino_build import BOARDS, build_example
from .sketch import EXAMPLE, example_operands, sketch


@dataclasses.dataclass(frozen=True)
class Family:
    generate_for: str  # the part the routines are generated (and picked) for
    measured_on: tuple[str, ...]  # the README's parts (the first verifies every routine)
    boards: tuple[str, ...]  # the example is built for these
    twin_for: str | None = None  # a part whose routines may differ (3-byte return addresses)


FAMILIES = {
    "mul": Family("atmega128", ("atmega128", "atmega328p"), ("uno", "mega"), "atmega2560"),
    "nomul": Family("attiny85", ("attiny85",), ("attiny85",)),
}
DEFAULT_SIZES = (128, 160, 192, 224, 256, 384, 512, 1024)
BUNDLE_OPS = ("mul", "sqr", "add", "sub")
LIBRARY_NAME = "avrmp"


@dataclasses.dataclass
class Entry:
    routine: Routine
    label: str  # the algorithm, as the picker lists it
    twin: Routine | None = None  # the same routine for family.twin_for, when its code differs
    reports: dict[str, Report] = dataclasses.field(default_factory=dict)  # part -> verification

    @property
    def symbol(self) -> str:
        return self.routine.spec.symbol

    def asm(self) -> str:
        """The .S: both builds under the preprocessor when the twin differs."""
        if self.twin is None:
            return self.routine.asm
        return (f"#if defined(__AVR_3_BYTE_PC__)  /* 3-byte return addresses */\n"
                f"{self.twin.asm}\n#else\n{self.routine.asm}\n#endif\n")


def bundle_sizes(sizes: list[int] | None, family: Family) -> list[int]:
    """The sizes asked for (default: every size the family's first part can verify)."""
    part = family.measured_on[0]
    if sizes is None:
        return [b for b in DEFAULT_SIZES if sram_fits("mul", b // 8, part)]
    bad = [b for b in sizes if b <= 0 or b % 8]
    if bad or not sizes:
        raise AvrmpError(f"--sizes: {bad[0] if bad else '(none)'} is not a positive multiple of 8")
    big = [b for b in sizes if not sram_fits("mul", b // 8, part)]
    if big:
        raise AvrmpError(f"--sizes {big[0]}: the operands do not fit {part}'s SRAM, so the "
                         "routine could not be verified there: choose smaller sizes")
    return sorted(set(sizes))


def choose(op: str, bits: int, family: Family, branched: bool, max_flash: int | None) -> Entry:
    best = fastest(op, bits, family.generate_for, branched, max_flash, progress=False)
    spec = dataclasses.replace(best.spec, name=f"avrmp_{op}{bits}")
    entry = Entry(generate(spec), best.label)
    if family.twin_for:
        twin = generate(dataclasses.replace(spec, mcu=family.twin_for))
        if _code(twin.asm) != _code(entry.routine.asm):
            entry.twin = twin
    return entry


def _code(asm: str) -> list[str]:
    return [ln for ln in asm.splitlines() if not ln.startswith(";")]


def verify_entry(entry: Entry, src: Path, family: Family, tests: int, seed: int | None,
                 workdir: Path) -> None:
    """Verified on each part of the family it fits (the first must hold it) and, for a twin,
    on the twin's part; a failure stops the bundle."""
    spec = entry.routine.spec
    parts = [*family.measured_on, *([family.twin_for] if entry.twin else [])]
    for part in parts:
        fits = sram_fits(spec.op, spec.operand_bytes, part) and \
            has_room(dataclasses.replace(spec, mcu=part)) and \
            entry.routine.code_bytes <= get_mcu(part).flash_bytes
        if not fits:
            continue
        report = verify_file(src / f"{entry.symbol}.S", entry.symbol, spec.op,
                             spec.operand_bytes, part, spec.variant, tests, workdir / part,
                             seed=seed)
        if not report.passed:
            raise AvrmpError(f"{entry.symbol} fails verification on {part}: "
                             f"{report.first_failure()}")
        entry.reports[part] = report


def library_files(entries: list[Entry], family_name: str, command: str) -> dict[str, str]:
    """Every file of the bundle but the README, by path relative to its folder."""
    files = {}
    for e in entries:
        files[f"src/{e.symbol}.S"] = e.asm()
        files[f"src/{e.symbol}.h"] = e.routine.header
    files["src/avrmp.h"] = "\n".join([
        f"/* avrmp bundle: every routine's header. Generated by avrmp {__version__}: {command} */",
        "#ifndef AVRMP_H", "#define AVRMP_H",
        *(f'#include "{e.symbol}.h"' for e in entries), "#endif", ""])
    files["library.properties"] = _properties(family_name)
    files["library.json"] = _library_json(family_name)
    mul = _example_mul(entries)
    files[f"examples/{EXAMPLE}/{EXAMPLE}.ino"] = sketch(mul.symbol, mul.routine.spec.bits,
                                                       __version__)
    return files


SENTENCE = ("Verified, constant-time multiprecision multiplication, squaring, addition and "
            "subtraction for 8-bit AVR.")


def _properties(family_name: str) -> str:
    parts = "ATmega (with MUL)" if family_name == "mul" else "ATtiny (without MUL)"
    return "\n".join([
        f"name={LIBRARY_NAME}", f"version={__version__}", "author=avrmp", "maintainer=avrmp",
        f"sentence={SENTENCE}",
        (f"paragraph=Generated by avrmp for {parts}: big-integer arithmetic for ECC and RSA, "
         "each routine verified in a cycle-accurate simulator."),
        "category=Data Processing", "url=",
        "architectures=avr", "includes=avrmp.h", ""])


def _library_json(family_name: str) -> str:
    return json.dumps({
        "name": LIBRARY_NAME, "version": __version__, "description": SENTENCE,
        "keywords": ["bignum", "multiprecision", "ecc", "rsa", "avr", family_name],
        "frameworks": ["arduino", "*"], "platforms": ["atmelavr"],
        "export": {"include": ["src", "examples", "library.properties", "README.md"]},
    }, indent=2) + "\n"


def _example_mul(entries: list[Entry]) -> Entry:
    """The multiplication the example calls: the largest up to 256 bits (its cycles fit
    Timer1), else the smallest."""
    muls = sorted((e for e in entries if e.routine.spec.op == "mul"),
                  key=lambda e: e.routine.spec.bits)
    small = [e for e in muls if e.routine.spec.bits <= 256]
    return small[-1] if small else muls[0]


def readme(entries: list[Entry], family: Family, family_name: str, command: str,
           example_runs: dict[str, list[str]]) -> str:
    parts = family.measured_on
    head = ["| routine | algorithm | bytes | " + " | ".join(
        f"{p} cycles | {p} stack" for p in parts) + " |",
        "|---|---|---|" + "---|---|" * len(parts)]
    rows = []
    for e in entries:
        cells = []
        for p in parts:
            r = e.reports.get(p)
            cells += [f"{r.abi_cycles}", f"{r.stack_depth}"] if r else ["does not fit", ""]
        rows.append(f"| `{e.symbol}` | {e.label} | {e.routine.code_bytes} | "
                    + " | ".join(cells) + " |")
    examples = [line for board, out in example_runs.items()
                for line in ["```", f"# {board} ({BOARDS[board].mcu})", *out, "```"]]
    return "\n".join([
        f"# {LIBRARY_NAME} — multiprecision arithmetic for AVR", "",
        f"{SENTENCE} Generated by avrmp {__version__} with `{command}`.", "",
        _USE, "",
        (f"Family: {family_name} ({'with' if family_name == 'mul' else 'without'} the hardware "
         "multiplier). Cycles: the whole call, measured in simavr on the verified routine "
         "(identical for every input); stack: bytes below the return address."), "",
        *head, *rows, "",
        (f"`examples/{EXAMPLE}` multiplies two numbers and prints the product and the cycles "
         "over the serial port (115200 baud). Its output in simavr, built with the Arduino "
         "IDE's compile and link flags:"), "",
        *examples, "",
    ])


_USE = """\
Install: copy this folder into the Arduino `libraries` folder (or zip it and use Sketch → Include
Library → Add .ZIP Library), or into PlatformIO's `lib/`, or add `src/*.S` to a Makefile.
`#include <avrmp.h>` declares every routine; only the routines a program calls end up in its
flash (each is an object file of its own, dropped by `--gc-sections` or by the linker).

Signatures: `void avrmp_mulN(uint8_t *r, const uint8_t *a, const uint8_t *b)` (r = a·b, 2N/8
bytes), `avrmp_sqrN(r, a)`, `avrmp_addN(r, a, b)` and `avrmp_subN(r, a, b)` (N/8 + 1 bytes: the
carry, or 0xFF on a borrow, in the top byte). Little-endian; r must not overlap the operands.
Each routine's `.S` header holds its spec, metrics and recorded choices."""


def run_example(library: Path, board: str, bits: int, workdir: Path) -> list[str]:
    """Build the example for board; where the board prints, run it in simavr and check the
    product it prints against Python's; its output lines."""
    sketch_file = library / "examples" / EXAMPLE / f"{EXAMPLE}.ino"
    elf = build_example(library, sketch_file, board, workdir / board)
    if not BOARDS[board].serial:
        return ["(built; this board has no UART0 to print on)"]
    lines = run_serial(elf, BOARDS[board].mcu)
    a, b = example_operands(bits)
    printed = {k.strip(): v.strip() for k, _, v in (ln.partition("=") for ln in lines)}
    if printed.get("a * b") != f"{a * b:0{bits // 2}x}":
        raise AvrmpError(f"the example on {board} printed a wrong product: {lines}")
    return lines


def make_bundle(out: Path, sizes: list[int] | None, family_name: str, branched: bool,
                max_flash: int | None, tests: int, seed: int | None, command: str,
                progress: bool = True) -> tuple[list[Entry], dict[str, list[str]]]:
    """Choose, verify, build and run, then write the folder (nothing is written unless every
    step passes)."""
    family = FAMILIES[family_name]
    todo = [(op, bits) for bits in bundle_sizes(sizes, family) for op in BUNDLE_OPS]
    require_writable(out, folder=True)
    entries = []
    with tempfile.TemporaryDirectory(prefix="avrmp-bundle-") as tmp, \
            progress_bar(enabled=progress, total=2 * len(todo), desc="bundle") as bar:
        trial = Path(tmp) / LIBRARY_NAME
        for op, bits in todo:
            bar.set_postfix_str(f"choose {op} {bits}")
            entries.append(choose(op, bits, family, branched, max_flash))
            bar.update()
        files = library_files(entries, family_name, command)
        _write_tree(trial, files)
        for e in entries:
            bar.set_postfix_str(f"verify {e.symbol}")
            verify_entry(e, trial / "src", family, tests, seed, Path(tmp) / "verify")
            bar.update()
        bits = _example_mul(entries).routine.spec.bits
        runs = {board: run_example(trial, board, bits, Path(tmp) / "build")
                for board in family.boards}
    files["README.md"] = readme(entries, family, family_name, command, runs)
    write_all({Path(out) / name: text for name, text in files.items()})
    for stale in earlier_routines(Path(out), files):  # the IDEs would build them too
        stale.unlink()
    return entries, runs


ROUTINE_FILE = re.compile(rf"avrmp_({'|'.join(BUNDLE_OPS)})\d+\.[Sh]")


def earlier_routines(out: Path, files: dict[str, str]) -> list[Path]:
    """The routine files an earlier bundle wrote into out/src that this one does not: avrmp's
    names and its "Generated by avrmp" mark (a user's own files are kept)."""
    src = out / "src"
    return [p for p in sorted(src.glob("avrmp_*")) if ROUTINE_FILE.fullmatch(p.name)
            and f"src/{p.name}" not in files and p.is_file()
            and "Generated by avrmp" in p.read_text(errors="replace")[:1000]]


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
