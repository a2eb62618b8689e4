"""The avrmp command line: gen, rebuild, tune, best, uecc, bundle, verify, profile, bench, list.

Every error a user can cause ends in one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import threading
from itertools import islice
from pathlib import Path

from . import __version__, progress
from .bench.arm import README_MARKERS as ARM_README_MARKERS
from .bench.arm import arm_catalog, arm_markdown, measure_arm
from .bench.catalog import TUNED_EXTRAS, catalog
from .bench.host64 import markdown as host64_markdown
from .bench.host64 import measure as measure_host64
from .bench.measure import run
from .bench.pick import pick, requests
from .bench.plot import plot, plot_paths
from .bench.report import (
    README_BEGIN,
    README_END,
    markdown,
    readme_around,
    update_readme,
    write_json,
)
from .errors import AvrmpError, Terminated, catch_stop_signals, stopped
from .library.bundle import DEFAULT_SIZES, FAMILIES, make_bundle
from .library.uecc import DROP_IN_FILE, ENTRY, UECC_FLAGS, UECC_SIZES, make_drop_in
from .output_files import real_path, require_writable, write_atomic
from .routine.files import DIALECTS, routine_paths, write_routine
from .routine.generate import generate, table_key
from .routine.rebuild import REGENERATE, rebuild, spec_fields, spec_from_header
from .routine.tune import tune, untuned
from .routine.wrapper import signature
from .spec import (
    AVR_VARIANTS,
    OPS,
    RUNTIME_LENGTH,
    TARGETS,
    VARIANTS,
    Spec,
    check_name,
    return_address_bytes,
)
from .target.avr.parts import DEFAULT_MCU, get_mcu, simulated_mcu
from .techniques.arm7tdmi.registry import ARM_ALGORITHMS, ARM_DEFAULT, WORD_BITS
from .techniques.host64 import REPRESENTATIONS, emit
from .techniques.registry import ALGORITHMS, DEFAULT_ALGO, get_algorithm
from .tuning import table
from .tuning.table import TABLE
from .verify.arm_checks import verify_arm
from .verify.checks import TIMING_CHECKS, require_sram, stack_room, verify_file
from .verify.generated import verify_generated
from .verify.host64 import verify_host, write_host_source
from .verify.inputs import DEFAULT_TESTS, check_tests
from .verify.profile import format_profile, profile_firmware
from .verify.toolchain import build_firmware, refuse_clashing_name

LEN_ARG_HELP = ("the routine takes the operand length in bytes (bits/8) as a uint16_t after the "
                "pointers, e.g. void f(uint8_t *r, const uint8_t *a, const uint8_t *b, uint16_t "
                "len); avrmp's --algo rps routines say so on their spec line, so they need "
                "no --len-arg")


class _StoreOnce(argparse.Action):
    """An option's value, refused when the option is given twice (argparse would keep the last
    without a word); the options given are recorded (`given`)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if self.option_strings:
            if self.dest in given(namespace):
                parser.error(f"argument {'/'.join(self.option_strings)}: given twice")
            namespace.__dict__.setdefault("options_given", set()).add(self.dest)
        setattr(namespace, self.dest, values)


class _FlagOnce(_StoreOnce):
    """A store_true option, refused when given twice as the others are."""

    def __init__(self, option_strings, dest, default=False, required=False, help=None) -> None:
        super().__init__(option_strings, dest, nargs=0, const=True, default=default,
                         required=required, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        super().__call__(parser, namespace, self.const, option_string)


def given(args: argparse.Namespace) -> set[str]:
    """The options (dest names) given on the command line, defaults left out."""
    return getattr(args, "options_given", set())


def _integer(text: str) -> int:
    """A whole number as written in decimal (int() would also take 6_4 and other forms)."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if len(text) > 100:  # (int() refuses more than 4300 digits, in words of its own)
        raise argparse.ArgumentTypeError(f"{text[:20]}...: {len(text)} digits; far too many")
    return int(text)


def _url(text: str) -> str:
    """--url: an http(s) address on one line (it goes into the metadata files as it is)."""
    if not re.fullmatch(r"https?://\S+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: give an http:// or https:// address")
    return text


def _path(text: str) -> Path:
    """A file path; an empty one would silently mean the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("empty path: name a file")
    return Path(text)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)
        self.register("action", "store_true", _FlagOnce)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        if self.prog == "avrmp" and args[:1] and args[0].startswith("-") \
                and args[0] not in ("-h", "--help", "--version"):
            self.error(f"unknown option {args[0]}: the command comes first ({', '.join(COMMANDS)})")
        # (the top parser reports a command's extra arguments: its help is the one to see)
        self.command = args[0] if self.prog == "avrmp" and args[:1] else None
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> None:  # one line, status 2, no usage dump
        if message.endswith("required: command"):
            message = f"give a command: {', '.join(COMMANDS)}"
        command = self.prog.split()[-1]
        if command == "avrmp" and getattr(self, "command", None) in COMMANDS:
            command = self.command
        see = "avrmp --help" if command == "avrmp" else f"avrmp {command} --help"
        self.exit(2, f"avrmp: error: {one_line(message)} (see {see})\n")


def one_line(message: str) -> str:
    """The message with line breaks and other control characters (from an argument, a path, a
    binary file's bytes) written as escapes: an error is one line, and prints no terminal
    control sequence."""
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in message)


def _symbol(text: str) -> str:
    """--symbol: the routine's global name, not empty."""
    if not text:
        raise argparse.ArgumentTypeError("'' is empty: give the routine's global symbol")
    return text


def _name(text: str) -> str:
    """--name as given: an empty one is refused, not taken for the default."""
    if not text:
        raise argparse.ArgumentTypeError("'' is empty: give a C identifier or leave --name out")
    return text


def _csv(kind):
    def parse(text: str) -> list:
        parts = [x.strip() for x in text.split(",")]
        if not any(parts):  # (leaving the option out means all)
            raise argparse.ArgumentTypeError(f"{text!r} names nothing: give at least one value")
        if "" in parts:
            raise argparse.ArgumentTypeError(f"{text!r} has an empty item: remove the extra comma")
        try:
            return [kind(x) for x in parts]
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list") from None

    return parse


def _add_spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--levels", type=_integer, help="Karatsuba recursion levels")
    p.add_argument("--d", type=_integer, help="hybrid: rows per block")
    p.add_argument("--e", type=_integer, help="operand caching: cached bytes per operand")
    p.add_argument("--looped", action="store_true", help="loops instead of full unrolling")


def build_parser() -> argparse.ArgumentParser:
    top = _Parser(prog="avrmp", description="Multiprecision arithmetic for 8-bit AVR.")
    top.add_argument("--version", action="version", version=f"avrmp {__version__}")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)

    g = sub.add_parser("gen", help="generate a routine (.S and .h)")
    _add_request_args(g)
    _add_target_arg(g, host64=True)
    g.add_argument("--name", type=_name,
                   help="symbol name (default avrmp_OPBITS_ALGO); not a C or C++ keyword or a "
                   "name avr-libc's or Arduino.h's headers define")
    g.add_argument("-o", "--out", type=_out_dir, required=True, help="output directory")
    g.add_argument("--dialect", choices=tuple(DIALECTS), default="gnu",
                   help="assembler syntax: gnu (NAME.S, avr-gcc) or avrasm2 (NAME.asm, Microchip "
                   "Studio, avra)")
    g.add_argument("--tune", action="store_true",
                   help="search the generator's choices instead of taking them from the tuned "
                   "table (the same text wherever the table is up to date, unless its entry "
                   "was tuned with --jitter: then a few cycles slower)")

    r = sub.add_parser("rebuild", help="rebuild a generated routine from its .S header alone")
    r.add_argument("file", type=_path, help="a .S (or AVRASM2 .asm) written by avrmp gen")
    r.add_argument("-o", "--out", type=_out_dir, required=True, help="output directory")

    t = sub.add_parser("tune", help="search routines' choices and record them in the tuned table")
    _add_request_args(t, op_required=False)
    t.add_argument("--catalog", action="store_true",
                   help="every routine of the benchmark catalog and the tuned extras")
    t.add_argument("--table", type=_path, default=TABLE, help="the table to write (default: the "
                   "package's tuned.json, the one gen, best and rebuild read; another file is "
                   "for trying a search, see docs/architecture.md)")
    t.add_argument("--jobs", type=_integer, default=1, help="searches run in parallel")
    t.add_argument("--missing", action="store_true",
                   help="only the routines the table lacks or holds in a form this "
                   "generator no longer replays (after a change to a technique)")
    t.add_argument("--jitter", type=_count, default=0, metavar="N",
                   help="Karatsuba blocks: also try N jittered register allocations of each "
                   "block's best form (a few cycles more, minutes longer; default 0)")
    _add_best_parser(sub)
    _add_uecc_parser(sub)
    _add_bundle_parser(sub)
    _add_verify_parser(sub)
    _add_profile_parser(sub)
    _add_bench_parser(sub)
    sub.add_parser("list", help="algorithms, their parameters and sizes")
    return top


HOST64_README_MARKERS = ("<!-- bench-host64:begin -->", "<!-- bench-host64:end -->")


def _add_target_arg(p: argparse.ArgumentParser, host64: bool = False) -> None:
    p.add_argument("--target", choices=(*TARGETS, "host64") if host64 else TARGETS,
                   default="avr",
                   help="avr (default: --mcu names the part), arm7tdmi (ARM state, AAPCS, "
                   "arm-none-eabi-gcc; operands in 32-bit words, --bits a multiple of 32)"
                   + (" or host64 (portable C for 255-bit integers, see --repr)" if host64
                      else ""))
    if host64:
        p.add_argument("--repr", choices=REPRESENTATIONS,
                       help="host64: the representation (radix64, radix51 or double); its .c "
                       "carries every operation: from/to bytes, add, sub, mul, carry")


def _add_request_args(p: argparse.ArgumentParser, op_required: bool = True) -> None:
    p.add_argument("op", choices=OPS, nargs=None if op_required else "?")
    p.add_argument("--bits", type=_integer,
                   help="operand size (required, except for run-time-length algorithms: rps)")
    p.add_argument("--algo", help="algorithm (see avrmp list); default depends on OP")
    p.add_argument("--variant", choices=VARIANTS, default="branchfree")
    p.add_argument("--mcu", default=DEFAULT_MCU)
    _add_spec_args(p)


def _add_best_parser(sub) -> None:
    b = sub.add_parser("best", help="the fastest routine within flash and stack budgets")
    b.add_argument("op", choices=OPS)
    b.add_argument("--bits", type=_integer, required=True)
    b.add_argument("--mcu", default=DEFAULT_MCU)
    b.add_argument("--max-flash", type=_integer, help="bytes of code at most (the whole function)")
    b.add_argument("--max-stack", type=_integer,
                   help="bytes of stack at most, below the return address, saved registers in")
    b.add_argument("--branched", action="store_true",
                   help="NOP-balanced branches allowed (constant cycles, not constant traces)")
    b.add_argument("--name", type=_name, help="symbol name of the winner")
    b.add_argument("-o", "--out", type=_out_dir, required=True, help="output directory")


def _add_uecc_parser(sub) -> None:
    u = sub.add_parser("uecc", help="micro-ecc drop-in: uECC_vli_mult and uECC_vli_square")
    u.add_argument("--sizes", type=_csv(_integer), default=list(UECC_SIZES),
                   help="word counts (bytes) with a routine of their own (default "
                   f"{','.join(map(str, UECC_SIZES))}: every micro-ecc curve); any other count "
                   "takes the run-time-length loop")
    u.add_argument("--mcu", default=DEFAULT_MCU)
    u.add_argument("--max-flash", type=_integer,
                   help="bytes of code at most per routine (looped routines fit small parts)")
    u.add_argument("--tests", type=_integer, default=DEFAULT_TESTS, help="random inputs per size")
    u.add_argument("--seed", type=_seed, help="replay an earlier run's inputs")
    u.add_argument("-o", "--out", type=_out_dir, required=True,
                   help=f"output directory (writes {DROP_IN_FILE})")


def _add_bundle_parser(sub) -> None:
    b = sub.add_parser("bundle", help="an Arduino / PlatformIO library folder of verified "
                       "routines, with an example")
    b.add_argument("--sizes", type=_csv(_integer),
                   help=f"operand bits (default {','.join(map(str, DEFAULT_SIZES))}, as far as "
                   "the family's parts can verify them)")
    b.add_argument("--family", choices=tuple(FAMILIES), default="mul",
                   help="mul: ATmega with the hardware multiplier (measured on the ATmega128 "
                   "and ATmega328P, example for the Uno and the Mega); nomul: ATtiny without "
                   "it (ATtiny85)")
    b.add_argument("--variant", choices=AVR_VARIANTS, default="branchfree",
                   help="branched: NOP-balanced branches allowed where faster")
    b.add_argument("--max-flash", type=_integer, help="bytes of code at most per routine")
    b.add_argument("--tests", type=_integer, default=DEFAULT_TESTS, help="random inputs per routine and part")
    b.add_argument("--seed", type=_seed, help="replay an earlier run's inputs")
    b.add_argument("--url", type=_url,
                   help="the library's home page, for library.properties and library.json "
                   "(Arduino's Library Manager and linter want one)")
    b.add_argument("-o", "--out", type=_out_dir, required=True, help="the library folder to write")


def _add_verify_parser(sub) -> None:
    v = sub.add_parser("verify", help="verify any routine with avrmp's signatures")
    v.add_argument("file", type=_path)
    v.add_argument("--symbol", required=True, type=_symbol)
    v.add_argument("--bits", type=_integer, required=True)
    v.add_argument("--op", choices=OPS, required=True)
    v.add_argument("--tests", type=_integer, default=DEFAULT_TESTS, help="random inputs besides the edge cases")
    v.add_argument("--mcu", default=DEFAULT_MCU)
    _add_target_arg(v)
    v.add_argument(
        "--variant", choices=(*VARIANTS, "none"), default="branchfree",
        help="timing discipline to check: branchfree = identical cycles and traces (on the "
        "ARM7TDMI: traces, cycles apart from the multiplier's early end), branched = identical "
        "cycles, consttime (ARM7TDMI) = identical traces and cycles, none = no timing check",
    )
    v.add_argument("--json", type=_path, help="write the report as JSON")
    v.add_argument("--seed", type=_seed, help="replay the random inputs and start states of an "
                   "earlier run (default: a fresh seed, printed)")
    v.add_argument("--no-interrupts", action="store_true",
                   help="skip running an interrupt handler after every instruction (reported; "
                   "the checks that need no handler still run)")
    v.add_argument("--len-arg", action="store_true", help=LEN_ARG_HELP)


def _add_profile_parser(sub) -> None:
    f = sub.add_parser("profile", help="where an AVR routine's cycles go, phase by phase, "
                       "measured in the simulator")
    f.add_argument("file", type=_path)
    f.add_argument("--symbol", required=True, type=_symbol)
    f.add_argument("--bits", type=_integer, required=True)
    f.add_argument("--op", choices=OPS, required=True)
    f.add_argument("--mcu", default=DEFAULT_MCU)
    f.add_argument("--seed", type=_seed, help="the random input's seed (default: fresh, printed)")
    f.add_argument("--json", type=_path, help="write the profile as JSON too")
    f.add_argument("--len-arg", action="store_true", help=LEN_ARG_HELP)


def _add_bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="generate, verify and measure the catalog")
    b.add_argument("--ops", type=_csv(str))
    b.add_argument("--bits", type=_csv(_integer))
    b.add_argument("--algos", type=_csv(str))
    b.add_argument("--variants", type=_csv(str))
    b.add_argument("--mcu", default=DEFAULT_MCU)
    _add_target_arg(b, host64=True)
    b.add_argument("--e", type=_csv(_integer), help="operand caching: run each of these e (seed 001 "
                   "Table 5) instead of the default")
    b.add_argument("--d", type=_csv(_integer), help="hybrid: run each of these d instead of the default")
    b.add_argument("--tests", type=_integer, default=DEFAULT_TESTS)
    b.add_argument("--json", type=_path, help="write the rows as JSON")
    b.add_argument("--markdown", type=_path, help="write the table as markdown")
    b.add_argument("--plot", type=_path, help="write the plots (PNG): PATH (cycles against "
                   "bits), PATH-relative (against the best public code and the seed papers) "
                   "and PATH-per-product (cycles per byte product)")
    b.add_argument("--readme", type=_path,
                   help="replace the table between the bench markers in this markdown file")


def _refuse_unused(args: argparse.Namespace, message: str, **defaults) -> None:
    """An error (message, with {} for the option) if an option this command ignores on its
    target was given, or holds a value other than its default: silently ignored, it would
    mislead."""
    for dest, default in defaults.items():
        if dest in given(args) or getattr(args, dest) != default:
            # (replace, not format: the message may quote a value with braces in it)
            raise AvrmpError(message.replace("{}", "--" + dest.replace("_", "-")))


def _out_dir(text: str) -> Path:
    """-o: a directory path (an empty one would silently mean the current directory)."""
    if not text:
        raise argparse.ArgumentTypeError("empty path: name the output directory ('.' for here)")
    return Path(text)


def _non_negative(text: str, hint: str) -> int:
    try:
        value = _integer(text)
    except argparse.ArgumentTypeError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: {hint}")
    return value


def _seed(text: str) -> int:
    """--seed: the non-negative integer a run printed (the random generator takes no other)."""
    return _non_negative(text, "give the seed a run printed (0 or more)")


MAX_JITTER = 10_000  # jittered allocations a block: some 500 take minutes at 256 bits


def _count(text: str) -> int:
    """--jitter: a count, 0 to MAX_JITTER."""
    hint = f"give a whole number, 0 to {MAX_JITTER}"
    if _non_negative(text, hint) > MAX_JITTER:
        raise argparse.ArgumentTypeError(f"{text!r}: {hint}")
    return _integer(text)


def _spec_from(args: argparse.Namespace) -> Spec:
    """The request of gen and tune, its --name checked as a program would meet it."""
    spec = _requested_spec(args)
    refuse_clashing_name(spec)
    return spec


def _requested_spec(args: argparse.Namespace) -> Spec:
    if args.algo == "":
        raise AvrmpError("--algo '': name an algorithm (see avrmp list) or leave --algo out")
    target = getattr(args, "target", "avr")
    if target == "arm7tdmi":
        if args.bits is None:
            raise AvrmpError("--bits is required (a multiple of 32 for the ARM7TDMI)")
        return Spec(op=args.op, bits=args.bits, algo=args.algo or ARM_DEFAULT,
                    variant=args.variant, name=args.name or "", levels=args.levels, d=args.d,
                    e=args.e, looped=args.looped, target=target)
    algo = args.algo or DEFAULT_ALGO[args.op]
    bits = args.bits
    if bits is None:
        a = get_algorithm(algo)
        if not a.runtime_length:
            raise AvrmpError(f"--bits is required for {algo} (the size is fixed at generation)")
        bits = 8 * a.max_bytes  # any valid length: the routine takes len at run time
    return Spec(
        op=args.op, bits=bits, algo=algo,
        variant=args.variant, mcu=args.mcu, name=args.name or "", levels=args.levels,
        d=args.d, e=args.e, looped=args.looped,
    )


def cmd_gen(args: argparse.Namespace) -> int:
    if args.target == "host64":
        return _gen_host64(args)
    if args.repr:
        raise AvrmpError("--repr applies to --target host64 only")
    if args.target != "avr":
        _refuse_unused(args, f"--target {args.target} writes GNU as with no searched choices: "
                       "{} does not apply", dialect="gnu", tune=False)
    if args.target != "avr":
        _refuse_unused(args, f"--mcu {args.mcu}: --target {args.target} has no MCU to choose",
                       mcu=DEFAULT_MCU)
    spec = _spec_from(args)
    require_writable(args.out, folder=True)
    for path in routine_paths(spec, args.out, args.dialect):
        require_writable(path)  # a read-only file or a link to nothing: before the search
    searching = args.tune or (spec.target == "avr" and table.lookup(table_key(spec)) is None)
    with _notice_if_slow(searching, f"avrmp: searching the choices for {spec.symbol} (not in "
                         "the tuned table, or --tune); this can take minutes: avrmp tune "
                         "records them"):
        routine = generate(spec, tune=args.tune)
    asm, hdr = write_routine(routine, args.out, args.dialect)
    print(f"{asm}\n{hdr}")
    return 0


SLOW_NOTICE_AFTER = 3.0  # seconds of generation before gen says that it is searching


@contextlib.contextmanager
def _notice_if_slow(when: bool, text: str):
    """If `when`, print text to stderr once the block has run SLOW_NOTICE_AFTER seconds on a
    terminal, progress.LOG_EVERY in a log (a search for a routine the tuned table lacks is
    silent otherwise; short runs print nothing to a log, as progress bars do)."""
    delay = SLOW_NOTICE_AFTER if sys.stderr.isatty() else progress.LOG_EVERY
    timer = threading.Timer(delay, lambda: print(text, file=sys.stderr, flush=True))
    if when:
        timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _gen_host64(args: argparse.Namespace) -> int:
    """The representation's .c and .h, verified against Python ints before they are written."""
    if not args.repr:
        raise AvrmpError("--target host64 needs --repr (radix64, radix51 or double)")
    _refuse_unused(args, "--target host64 takes OP, --repr, --name and -o only, not {}: its "
                   "files carry every operation for 255-bit integers",
                   bits=None, algo=None, variant="branchfree", mcu=DEFAULT_MCU, levels=None,
                   d=None, e=None, looped=False, tune=False, dialect="gnu")
    if args.op not in ("mul", "add", "sub"):
        raise AvrmpError(f"--target host64 does not do {args.op}: its files serve mul, add, sub")
    if args.name:
        check_name(args.name)
    source = emit(args.repr, args.name or None)
    report = verify_host(args.repr, tests=1000, seed=1, source=source)
    if not report.passed:
        raise AvrmpError(f"the generated C fails verification: {report.first_failure()}")
    for path in write_host_source(source, args.out):
        print(path)
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    _readable_asm(args.file)
    original = args.file.read_bytes().decode(errors="replace")  # CRLF kept: it differs
    routine = rebuild(args.file)
    dialect = "avrasm2" if args.file.suffix == DIALECTS["avrasm2"] else "gnu"
    text = routine.text(dialect)
    asm, hdr = routine_paths(routine.spec, args.out, dialect)
    if real_path(hdr) == real_path(args.file):
        raise AvrmpError(f"-o would overwrite {args.file} with the routine's C header: choose "
                         "another output folder")
    if real_path(asm) == real_path(args.file) and text != original:
        raise AvrmpError(f"{args.file} differs from the routine its header makes, and -o would "
                         "overwrite it: choose another output folder")
    require_writable(args.out, folder=True)
    for path in (asm, hdr):
        require_writable(path)  # before the verification
    try:  # its choices may have been edited: wrong code is never written
        with _notice_if_slow(True, "avrmp: verifying the rebuilt routine (the test load, seed 1) "
                             "before it is written"):
            verified = verify_generated(routine)
    except AvrmpError as e:
        raise AvrmpError(f"{args.file}: nothing written: {e}; generate it again with avrmp gen"
                         ) from None
    asm, hdr = write_routine(routine, args.out, dialect)
    print(f"{asm}\n{hdr}\n{'identical to' if text == original else 'differs from'} {args.file}; "
          f"{verified}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    if args.catalog == (args.op is not None):
        raise AvrmpError("tune takes either OP (with --bits and the other options of gen) or "
                         "--catalog")
    cores = os.cpu_count() or 1
    if not 1 <= args.jobs <= cores:
        raise AvrmpError(f"--jobs {args.jobs}: choose 1 to {cores} (the cores of this machine)")
    if args.catalog:
        _refuse_unused(args, "--catalog tunes every routine of the catalog: {} does not apply",
                       bits=None, algo=None, variant="branchfree", mcu=DEFAULT_MCU, levels=None,
                       d=None, e=None, looped=False)
    args.name = ""
    specs = catalog() + TUNED_EXTRAS if args.catalog else [_spec_from(args)]
    if args.missing:
        specs = untuned(specs, args.table)
    require_writable(args.table)
    found = tune(specs, args.table, args.jobs, progress=True, jitter=args.jitter)
    print(f"{len(found)} routine(s) tuned into {args.table}")
    return 0


def cmd_best(args: argparse.Namespace) -> int:
    _positive(args, "max_flash")
    if args.max_stack is not None and args.max_stack < 0:
        raise AvrmpError(f"--max-stack {args.max_stack}: must be 0 or more")
    _avr_operand_bytes(args)
    candidates = requests(args.op, args.bits, args.mcu, args.branched)
    require_writable(args.out, folder=True)
    named = [dataclasses.replace(s, name=args.name or "") for s in candidates]  # (Spec checks it)
    refuse_clashing_name(named[0])
    for path in dict.fromkeys(p for s in named for p in routine_paths(s, args.out)):
        require_writable(path)  # whichever is chosen, before the run
    best, found = pick(candidates, args.max_flash, args.max_stack, progress=True)
    routine = generate(dataclasses.replace(best.spec, name=args.name or ""))
    verify_generated(routine)
    asm, hdr = write_routine(routine, args.out)  # before the table: a closed stdout loses no file
    print(f"{'candidate':46} {'core':>8} {'ABI':>8} {'bytes':>7} {'stack':>6}")
    for c in found:
        mark = "  <- chosen" if c is best else f"  ({c.misses})" if c.misses else ""
        print(f"{c.label:46} {c.core_cycles:8} {c.abi_cycles:8} {c.routine.code_bytes:7} "
              f"{c.stack_bytes:6}{mark}")
    print(f"{asm}\n{hdr}\nC prototype: {signature(routine.spec)[1]}")  # (rps: a length too)
    return 0


def _command_line(name: str) -> str:
    """The command as the user typed it, for the files' headers to repeat (else its name):
    quoted for a shell and on one line (a line break in a path would end the comment)."""
    if sys.argv[1:2] != [name]:
        return f"avrmp {name}"
    return one_line("avrmp " + shlex.join(sys.argv[1:]))


def cmd_uecc(args: argparse.Namespace) -> int:
    _positive(args, "max_flash")
    check_tests(args.tests, least=1)
    command = _command_line("uecc")
    path, reports = make_drop_in(args.out, args.sizes, args.mcu, args.max_flash, args.tests,
                                 args.seed, command, progress=True)
    print(f"{'entry':16} {'words':>5} {'inputs':>6} {'cycles (call to return)':>24} {'stack':>6}")
    for op, words, r in reports:
        print(f"{ENTRY[op]:16} {words:5} {r.inputs:6} {r.abi_cycles:24} {r.stack_depth:6}")
    print(f"all verified (seed {reports[0][2].seed})\n{path}")
    print(f"compile micro-ecc with: {UECC_FLAGS}")
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    _positive(args, "max_flash")
    check_tests(args.tests, least=1)
    command = _command_line("bundle")
    entries, runs = make_bundle(args.out, args.sizes, args.family, args.variant == "branched",
                                args.max_flash, args.tests, args.seed, command,
                                progress=True, url=args.url or "")
    parts = FAMILIES[args.family].measured_on
    print(f"{'routine':22} {'algorithm':40} {'bytes':>6} " + " ".join(f"{p:>12}" for p in parts))
    for e in entries:
        cycles = (str(e.reports[p].abi_cycles) if p in e.reports else "-" for p in parts)
        print(f"{e.symbol:22} {e.label:40} {e.routine.code_bytes:6} "
              + " ".join(f"{c:>12}" for c in cycles))
    for board, lines in runs.items():
        print(f"example on {board}: " + "; ".join(lines))
    print(f"{args.out}: {len(entries)} routines verified (cycles: whole call), "
          f"library.properties, library.json, README.md, examples/")
    return 0


def _positive(args: argparse.Namespace, *flags: str) -> None:
    for flag in flags:
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise AvrmpError(f"--{flag.replace('_', '-')} {value}: must be positive")


def _readable_asm(path: Path) -> list[str]:
    """The file's first lines (where avrmp writes the spec line), or a one-line error."""
    if path.is_dir():
        raise AvrmpError(f"cannot read {path}: it is a directory; give the .S file")
    if not path.exists():
        raise AvrmpError(f"cannot read {path}: no such file")
    if not path.is_file():
        raise AvrmpError(f"cannot read {path}: not a regular file")
    if path.suffix in (".h", ".c"):
        kind = "a C header" if path.suffix == ".h" else "C source"
        raise AvrmpError(f"{path} is {kind}, not assembly: give the routine's assembly file")
    try:
        with open(path, errors="replace") as f:
            head = list(islice(f, 8))
    except OSError as e:
        raise AvrmpError(f"cannot read {path}: {e.strerror}") from None
    if any("\0" in line for line in head):
        raise AvrmpError(f"{path} is a binary file, not assembly: give the routine's assembly "
                         "file")
    return head


def _with_spec_of(path: Path, symbol: str, head: list[str]) -> list[str]:
    """head, or for a file of several routines (avrmp uecc's, a spec line for each) the spec
    line that names `symbol`, as if it were that routine's own file."""
    if not any(REGENERATE in line for line in head):
        return head
    token = f"name={symbol}"
    with open(path, errors="replace") as f:
        return next(([line] for line in f
                     if line.startswith(("; spec:", "@ spec:")) and token in line.split()), head)


def _written_for(head: list[str]) -> str | None:
    """The target an avrmp routine's spec line names by its comment character (ARM `@`, AVR
    `;`), or None for a file avrmp did not write."""
    for line in head:
        if line.startswith(("@ spec:", "; spec:")):
            return "arm7tdmi" if line[0] == "@" else "avr"
    return None


def _avr_operand_bytes(args: argparse.Namespace) -> int:
    """The operand bytes of an AVR routine's --bits, with its --mcu one the simulator has."""
    simulated_mcu(args.mcu)
    if args.bits <= 0 or args.bits % 8:
        raise AvrmpError(f"--bits {args.bits}: must be a positive multiple of 8")
    return args.bits // 8


def _simulated_input(args: argparse.Namespace) -> list[str]:
    """verify's and profile's checks before the run: a readable GNU-syntax file (the head of it
    is returned), --len-arg as its spec line says (set from it for an avrmp routine, refused
    for one of fixed length), and --json writable and not that file (it would be replaced)."""
    head = _with_spec_of(args.file, args.symbol, _readable_asm(args.file))
    if args.file.suffix == DIALECTS["avrasm2"]:
        raise AvrmpError(f"{args.file} is avrasm2 source: verify and profile build with avr-gcc, "
                         "so give them the .S (avrmp gen without --dialect avrasm2)")
    spec_lines = [line for line in head if line.startswith("; spec:")]
    runtime_length = any(f"length={RUNTIME_LENGTH}" in line for line in spec_lines)
    if args.len_arg and spec_lines and not runtime_length:
        raise AvrmpError(f"--len-arg: {args.file} is an avrmp routine of fixed length (its spec "
                         "line has no run-time length)")
    args.len_arg = args.len_arg or runtime_length
    _require_spec_agrees(args, head)
    if args.json:
        if args.json.exists() and real_path(args.json) == real_path(args.file):
            raise AvrmpError(f"--json {args.json} is the routine itself: give the report "
                             "another name")
        require_writable(args.json)
    return head


def _require_spec_agrees(args: argparse.Namespace, head: list[str]) -> None:
    """For a routine avrmp wrote: --op, --bits and --variant (unless none; left out, the spec
    line's) as its spec line says, and an --mcu with the MUL and the return address its code
    assumes; a run under other ones would report failures of the arguments, not of the
    routine."""
    try:
        fields = spec_fields(head)
    except AvrmpError as e:
        raise AvrmpError(f"{args.file}: {e}") from None
    if fields is None:
        return
    if "variant" in fields and "variant" not in given(args):  # the routine's own discipline
        if fields["variant"] not in VARIANTS:  # not avrmp's: a hand-edited line cannot lift checks
            raise AvrmpError(f"{args.file}: its spec line says variant={fields['variant']}, "
                             f"which avrmp does not write ({', '.join(VARIANTS)}): give --variant")
        args.variant = fields["variant"]
    asked = {"op": args.op, "bits": str(args.bits), "variant": getattr(args, "variant", None)}
    for key, value in asked.items():
        if key in fields and value not in (None, "none") and fields[key] != value:
            raise AvrmpError(f"--{key} {value}: {args.file} is a {key}={fields[key]} routine (its "
                             f"spec line): give --{key} {fields[key]}")
    if "length" in fields and fields.get("algo") in ALGORITHMS:  # a length the algorithm takes
        Spec(args.op, args.bits, fields["algo"])
    if "mcu" in fields and fields["mcu"] != args.mcu and getattr(args, "target", "avr") == "avr":
        try:
            made, part = spec_from_header(head, args.file), get_mcu(args.mcu)
        except AvrmpError:  # a spec line edited by hand, or an unknown --mcu (refused later)
            return
        if made.uses_mul and not part.has_mul:
            raise AvrmpError(f"--mcu {args.mcu}: {args.file} was generated for {made.mcu} and "
                             f"multiplies with MUL, which {args.mcu} lacks: give --mcu "
                             f"{made.mcu}")
        pc = return_address_bytes(made), return_address_bytes(made, args.mcu)
        if pc[0] != pc[1]:
            raise AvrmpError(f"--mcu {args.mcu}: {args.file}'s calls assume the {pc[0]}-byte "
                             f"return address of {made.mcu}, where {args.mcu} pushes {pc[1]}: "
                             f"give --mcu {made.mcu}")


def _stack_room(args: argparse.Namespace, head: list[str]) -> int | None:
    """The stack one call of a routine avrmp wrote may take (checks.stack_room); None for a
    routine avrmp did not write."""
    try:
        return stack_room(spec_from_header(head, args.file))
    except AvrmpError:
        return None


def cmd_verify(args: argparse.Namespace) -> int:
    head = _simulated_input(args)
    if args.target == "arm7tdmi" and _written_for(head) == "avr":
        raise AvrmpError(f"{args.file} is an AVR routine: verify it without --target arm7tdmi")
    if args.target == "arm7tdmi":
        return _verify_arm(args)
    if _written_for(head) == "arm7tdmi":
        raise AvrmpError(f"{args.file} is an ARM7TDMI routine: verify it with --target arm7tdmi")
    if args.variant == "consttime":
        raise AvrmpError("--variant consttime checks ARM7TDMI routines; on the AVR, branchfree "
                         "checks identical cycles and traces")
    nbytes = _avr_operand_bytes(args)
    with tempfile.TemporaryDirectory(prefix="avrmp-") as tmp:
        report = verify_file(args.file, args.symbol, args.op, nbytes, args.mcu,
                             args.variant, args.tests, Path(tmp), len_arg=args.len_arg,
                             seed=args.seed, interrupts=not args.no_interrupts,
                             progress=True, stack=_stack_room(args, head))
    interrupts = (f"an interrupt after every instruction on {report.interrupt_inputs} inputs"
                  if not args.no_interrupts else "interrupts skipped (--no-interrupts)")
    spread = ("" if report.core_range[0] == report.core_range[1] else
              f" on input #0, {report.core_range[0]}-{report.core_range[1]} over the load")
    summary = (f"{args.symbol}: {report.inputs} inputs (seed {report.seed}), {interrupts}; "
               f"timing as {args.variant} ({TIMING_CHECKS[args.variant]}); core "
               f"{report.core_cycles} cycles{spread}, ABI {report.abi_cycles} cycles, stack "
               f"{report.stack_depth} bytes")
    if args.json:
        _write_verify_json(args, report, mcu=args.mcu, interrupt_inputs=report.interrupt_inputs,
                           core_cycles=report.core_cycles, abi_cycles=report.abi_cycles,
                           core_range=list(report.core_range), abi_range=list(report.abi_range))
    if report.passed:
        print(f"PASS {summary}")
        return 0
    print(f"FAIL {summary}", file=sys.stderr)
    print(f"avrmp: verification failed: {report.first_failure()} (replay: --seed "
          f"{report.seed})", file=sys.stderr)
    return 1


def cmd_profile(args: argparse.Namespace) -> int:
    head = _simulated_input(args)
    if _written_for(head) == "arm7tdmi":
        raise AvrmpError(f"{args.file} is an ARM7TDMI routine: profile runs AVR routines in "
                         "simavr (avrmp verify --target arm7tdmi times ARM ones)")
    nbytes = _avr_operand_bytes(args)
    require_sram(args.op, nbytes, args.mcu, _stack_room(args, head))
    with tempfile.TemporaryDirectory(prefix="avrmp-") as tmp:
        fw = build_firmware(args.file, args.symbol, args.mcu, Path(tmp))
        prof = profile_firmware(fw, args.file, args.op, nbytes, args.seed,
                                (nbytes,) if args.len_arg else ())
    if args.json:
        data = {"symbol": args.symbol, "op": args.op, "bits": args.bits, "mcu": args.mcu,
                "seed": prof.seed, "core_cycles": prof.core_cycles,
                "runs": [dataclasses.asdict(r) for r in prof.runs],
                "by_phase": [{"phase": p, "cycles": c, "runs": n} for p, c, n in prof.by_phase()]}
        write_atomic(args.json, json.dumps(data, indent=1) + "\n")
    print(format_profile(args.symbol, prof))
    return 0


def _verify_arm(args: argparse.Namespace) -> int:
    _refuse_unused(args, "--target arm7tdmi runs the routine in the emulator, with no MCU and no "
                   "interrupts: {} does not apply", mcu=DEFAULT_MCU, no_interrupts=False)
    if args.bits <= 0 or args.bits % WORD_BITS:
        raise AvrmpError(f"--bits {args.bits}: a positive multiple of 32 for the ARM7TDMI")
    if args.variant == "branched" or args.len_arg:
        raise AvrmpError("--target arm7tdmi checks --variant branchfree, consttime or none, "
                         "fixed sizes")
    r = verify_arm(args.file, args.symbol, args.op, args.bits // WORD_BITS, args.variant,
                   args.tests, args.seed, progress=True)
    spread = ("the same on every input" if r.core_min == r.core_max else
              f"{r.core_min}-{r.core_max} over the load: the multiplier ends early on small "
              "words")
    summary = (f"{args.symbol}: {r.inputs} inputs (seed {r.seed}); core {r.core_typical} "
               f"cycles on a random input ({spread}), ABI {r.abi_typical}, stack "
               f"{r.stack_depth} bytes, {r.code_bytes} bytes of code")
    if args.json:
        _write_verify_json(args, r, target="arm7tdmi", core_typical=r.core_typical,
                           core_min=r.core_min, core_max=r.core_max, abi_typical=r.abi_typical,
                           code_bytes=r.code_bytes)
    if r.passed:
        print(f"PASS {summary}")
        return 0
    print(f"FAIL {summary}", file=sys.stderr)
    print(f"avrmp: verification failed: {r.first_failure()} (replay: --seed {r.seed})",
          file=sys.stderr)
    return 1


def _write_verify_json(args: argparse.Namespace, report, **measured) -> None:
    """verify --json: the run, what it measured (AVR or ARM7TDMI figures), the first failures."""
    data = {
        "symbol": args.symbol, "op": args.op, "bits": args.bits, "variant": args.variant,
        "inputs": report.inputs, "seed": report.seed, "passed": report.passed, **measured,
        "stack_depth": report.stack_depth,
        "failures": [f.describe() for f in report.failures[:20]],
    }
    write_atomic(args.json, json.dumps(data, indent=1) + "\n")


def cmd_bench(args: argparse.Namespace) -> int:
    if args.target == "arm7tdmi":
        return _bench_arm(args)
    if args.target == "host64":
        return _bench_host64(args)
    _refuse_unused(args, "{} applies to --target host64 only", repr=None)
    simulated_mcu(args.mcu)
    for algo in args.algos or ():
        get_algorithm(algo)
    for name, given, known in (("--ops", args.ops, OPS), ("--variants", args.variants,
                                                                  AVR_VARIANTS)):
        for x in given or ():
            if x not in known:
                raise AvrmpError(f"{name}: unknown {x!r}: choose from {', '.join(known)}")
    check_tests(args.tests)
    specs = catalog(args.ops, args.bits, args.algos, args.variants, args.mcu,
                          {"e": args.e, "d": args.d})
    _require_outputs(args, (README_BEGIN, README_END))
    rows = run(specs, args.tests, progress=True)
    if args.plot:
        plot(rows, args.plot)
    return _publish(args, rows, markdown(rows), (README_BEGIN, README_END))


PLOT_SUFFIXES = (".png", ".svg", ".pdf")  # formats every matplotlib backend writes


def _require_outputs(args: argparse.Namespace, markers: tuple[str, str]) -> None:
    """Every file the bench will write, checked before it measures (which takes minutes)."""
    plots = plot_paths(args.plot) if args.plot else []
    files = [Path(p) for p in (args.json, args.markdown) if p] + plots
    outputs = [real_path(p) for p in [*files, *([args.readme] if args.readme else [])]]
    if len(set(outputs)) < len(outputs):
        raise AvrmpError("--json, --markdown, --readme and the three plots --plot names ("
                         f"{', '.join(p.name for p in plots) or 'none'}) must be different files")
    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        raise AvrmpError(f"--plot {args.plot}: name a {', '.join(PLOT_SUFFIXES)} file")
    for path in files:
        require_writable(path)
    if args.readme:
        readme_around(args.readme, markers)
        require_writable(args.readme)


def _publish(args: argparse.Namespace, rows: list, table: str, markers: tuple[str, str]) -> int:
    """Print a benchmark's table and write it where asked (--json, --markdown, the README
    between `markers`); status 1 if a routine failed verification."""
    print(table, end="")
    if args.json:
        write_json(rows, args.json)
    if args.markdown:
        write_atomic(args.markdown, table)
    if args.readme:
        update_readme(args.readme, table, markers)
    failed = [r for r in rows if not getattr(r, "verified", True)]  # host64 rows: nothing run
    if failed:
        print(f"avrmp: {len(failed)} routine(s) failed verification", file=sys.stderr)
        return 1
    return 0


def _bench_arm(args: argparse.Namespace) -> int:
    _refuse_unused(args, "--target arm7tdmi benchmarks the ARM7TDMI catalog (--bits, --algos, "
                   "--tests and the outputs), not {}", ops=None, variants=None,
                   mcu=DEFAULT_MCU, e=None, d=None, repr=None, plot=None)
    for algo in args.algos or ():
        if algo not in ARM_ALGORITHMS:
            raise AvrmpError(f"--algos: unknown ARM7TDMI algorithm {algo!r}: choose from "
                             f"{', '.join(ARM_ALGORITHMS)}")
    check_tests(args.tests)
    specs = arm_catalog(args.bits, args.algos)
    _require_outputs(args, ARM_README_MARKERS)
    rows = measure_arm(specs, args.tests, progress=True)
    return _publish(args, rows, arm_markdown(rows), ARM_README_MARKERS)


def _bench_host64(args: argparse.Namespace) -> int:
    """Each operation of each representation timed in one process: ratios, not absolutes."""
    _refuse_unused(args, "--target host64 times every operation of every representation: it "
                   "takes the outputs only, not {}", ops=None, bits=None, algos=None,
                   variants=None, mcu=DEFAULT_MCU, e=None, d=None, repr=None, tests=DEFAULT_TESTS,
                   plot=None)
    _require_outputs(args, HOST64_README_MARKERS)
    rows = measure_host64(progress=True)
    return _publish(args, rows, host64_markdown(rows), HOST64_README_MARKERS)


def cmd_list(args: argparse.Namespace) -> int:
    for a in ALGORITHMS.values():
        ops = ", ".join(op + (" (default)" if DEFAULT_ALGO.get(op) == a.name else "")
                        for op in a.builders)
        print(f"{a.name}\n    {a.summary}\n    ops: {ops}; sizes: {8 * a.min_bytes}.."
              f"{8 * a.max_bytes} bits{' (even bytes)' if a.even_only else ''}; "
              f"variants: {', '.join(a.variants)}" + (f"; params: {a.params}" if a.params else "")
              + ("" if a.needs_mul else "; runs without MUL")
              + (f"; --looped: {', '.join(a.looped_builders)}" if a.looped_builders else "")
              + "".join(f" (--{p} 1..{hi})" for p, hi in a.looped_max.items())
              + (f"; {a.limits}" if a.limits else ""))
    print("\nA fully unrolled routine must also fit the part's flash, and one call its SRAM: "
          "gen says so when they do not.")
    print("\n--target arm7tdmi (mul, 32-bit words):")
    for a in ARM_ALGORITHMS.values():
        print(f"{a.name}\n    {a.summary}\n    sizes: {WORD_BITS * a.min_words}.."
              f"{WORD_BITS * a.max_words} bits" + (" (even words)" if a.even_only else "")
              + f"; variants: {', '.join(a.variants)}"
              + ("; the default" if a.name == ARM_DEFAULT else ""))
    return 0


COMMANDS = {"gen": cmd_gen, "rebuild": cmd_rebuild, "tune": cmd_tune, "best": cmd_best,
            "uecc": cmd_uecc, "bundle": cmd_bundle, "verify": cmd_verify,
            "profile": cmd_profile, "bench": cmd_bench, "list": cmd_list}


def main(argv: list[str] | None = None) -> int:
    if sys.stdout is None:  # started with its standard output closed (`avrmp list >&-`)
        print("avrmp: error: standard output is closed", file=sys.stderr)
        return 2
    if hasattr(sys.stdout, "reconfigure"):  # a path's bytes that are not UTF-8 printed as they are
        sys.stdout.reconfigure(errors="surrogateescape")
    args = build_parser().parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = catch_stop_signals() if in_main_thread else {}
    try:
        with _tools_tmpdir():
            status = COMMANDS[args.command](args)
        sys.stdout.flush()  # a full disk or a closed pipe is reported here, not at exit
        return status
    except AvrmpError as e:
        print(f"avrmp: error: {one_line(str(e))}", file=sys.stderr)
        return e.status
    except (KeyboardInterrupt, Terminated) as stop:
        return stopped(stop)
    except OSError as e:  # a path the system refuses (too long, say), or stdout gone
        return _system_error(e)
    finally:
        for s, handler in previous.items():  # (None: a handler not set from Python, the default)
            signal.signal(s, signal.SIG_DFL if handler is None else handler)


@contextlib.contextmanager
def _tools_tmpdir():
    """The tools avrmp runs (avr-gcc, gcc) keep their temporary files in a folder of its own,
    removed when the command ends however it ends: a tool that a SIGTERM to avrmp alone stops
    (subprocess kills it) cannot remove them itself."""
    folder = tempfile.mkdtemp(prefix="avrmp-tools-")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = before
        shutil.rmtree(folder, ignore_errors=True)


def _system_error(e: OSError) -> int:
    """One line, status 2, for an OSError no command turned into an AvrmpError."""
    if e.filename is None:  # stdout: a closed pipe, a full disk
        with contextlib.suppress(OSError):  # and no second error when Python flushes at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"avrmp: error: cannot write the output: {e.strerror or e}", file=sys.stderr)
    else:
        print(f"avrmp: error: {one_line(str(e.filename))}: {e.strerror or e}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
