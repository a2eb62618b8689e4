"""Verification of the host64 C (techniques/host64): the generated .c is compiled by the host C
compiler (-O2 -std=c99 -pedantic -Wall -Wextra -Werror) into a shared library, every function is
called through ctypes and its result compared with Python integers: random and edge values,
negative intermediates, unreduced limbs, and +/- chains exactly at each representation's
headroom bound (target/host64)."""

from __future__ import annotations

import ctypes
import os
import random
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AvrmpError
from ..output_files import write_all
from ..target.host64 import Representation, representation
from ..techniques.host64 import HostSource, emit
from .inputs import DEFAULT_TESTS

CFLAGS = ("-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror")
MAX_FAILURES = 20
CTYPES = {"uint64_t": ctypes.c_uint64, "int64_t": ctypes.c_int64, "double": ctypes.c_double}


@dataclass
class HostReport:
    representation: str
    passed: bool
    inputs: int  # test cases run: values, pairs, chains
    seed: int
    int128: bool  # whether unsigned __int128 was allowed (False: the 32-bit-halves fallback)
    failures: list[str] = field(default_factory=list)  # one line each, at most MAX_FAILURES

    def first_failure(self) -> str | None:
        return self.failures[0] if self.failures else None


def find_compiler() -> str:
    """$CC if set, else cc, gcc or clang on PATH; AvrmpError if there is none."""
    for name in [os.environ.get("CC", "")] + ["cc", "gcc", "clang"]:
        path = shutil.which(name) if name else None
        if path:
            return path
    raise AvrmpError("no C compiler (install gcc)")


def compile_c(files: dict[str, str], output: Path, extra: Sequence[str] = ()) -> Path:
    """Write files (name -> text) beside output and compile the .c ones into output with
    CFLAGS + extra; AvrmpError with the compiler's first error line if it fails."""
    cc = find_compiler()
    for name, text in files.items():
        (output.parent / name).write_text(text)
    sources = [str(output.parent / n) for n in files if n.endswith(".c")]
    proc = subprocess.run([cc, *CFLAGS, *extra, *sources, "-o", str(output)],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        lines = [ln for ln in proc.stderr.splitlines() if "error" in ln] or [proc.stderr.strip()]
        raise AvrmpError(f"{Path(cc).name} failed on {', '.join(files)}: {lines[0].strip()}: "
                         "report this with the generated C")
    return output


def write_host_source(source: HostSource, outdir: Path) -> tuple[Path, Path]:
    """NAME.c and NAME.h in outdir, both or neither (atomic)."""
    c, h = Path(outdir) / f"{source.name}.c", Path(outdir) / f"{source.name}.h"
    write_all({c: source.c_text, h: source.h_text})
    return c, h


class HostLibrary:
    """The functions of one compiled HostSource, on Python values: limbs are lists of ints (or
    floats for doubles), byte strings are ints (little-endian)."""

    def __init__(self, path: Path, source: HostSource) -> None:
        self.rep = representation(source.representation)
        self.lib = ctypes.CDLL(str(path))
        self.limb = CTYPES[self.rep.c_limb]
        self.fn = {name[len(source.name) + 1:]: getattr(self.lib, name)
                   for name in source.functions}
        for op in ("add", "sub"):
            self.fn[op].restype = ctypes.c_uint64 if self.rep.name == "radix64" else None

    def array(self, limbs: Sequence[int | float], n: int) -> ctypes.Array:
        return (self.limb * n)(*limbs)

    def from_bytes(self, value: int) -> list:
        r = (self.limb * self.rep.limbs)()
        self.fn["from_bytes"](r, (ctypes.c_ubyte * 32).from_buffer_copy(value.to_bytes(32, "little")))
        return list(r)

    def to_bytes(self, limbs: Sequence, wide: bool = False) -> int:
        n = 64 if wide else 32
        out = (ctypes.c_ubyte * n)()
        fn = self.fn["product_to_bytes" if wide else "to_bytes"]
        fn(out, self.array(limbs, self.rep.product_limbs if wide else self.rep.limbs))
        return int.from_bytes(bytes(out), "little")

    def arith(self, op: str, a: Sequence, b: Sequence) -> tuple[list, int]:
        """add or sub: (limbs, carry or borrow out; always 0 for the lazy representations)."""
        n = self.rep.limbs
        r = (self.limb * n)()
        c = self.fn[op](r, self.array(a, n), self.array(b, n))
        return list(r), int(c or 0)

    def carry(self, limbs: Sequence) -> list:
        a = self.array(limbs, self.rep.limbs)
        self.fn["carry"](a)
        return list(a)

    def mul(self, a: Sequence, b: Sequence) -> list:
        n = self.rep.limbs
        r = (self.limb * self.rep.product_limbs)()
        self.fn["mul"](r, self.array(a, n), self.array(b, n))
        return list(r)

    def times(self, count: int, x: Sequence, op: str = "add") -> list:
        """0 op x op x ... (count operands) by doubling: the same limbs a chain of count - 1
        additions gives, as long as it is exact, in about 2 log2(count) calls."""
        acc, power = [0] * self.rep.limbs, list(x)
        while count:
            if count & 1:
                acc = self.arith(op, acc, power)[0]
            count >>= 1
            if count:
                power = self.arith("add", power, power)[0]
        return acc


class Checker:
    """Runs checks against one library and collects one-line failures."""

    def __init__(self, lib: HostLibrary) -> None:
        self.lib, self.rep = lib, lib.rep
        self.failures: list[str] = []
        self.inputs = 0

    def expect(self, ok: bool, what: str) -> bool:
        if not ok and len(self.failures) < MAX_FAILURES:
            self.failures.append(what)
        return ok

    def value(self, limbs: Sequence, what: str) -> int | None:
        """The value of limbs, or None (and a failure) if a double limb is no integer multiple
        of its weight."""
        try:
            return self.rep.value(limbs)
        except (ValueError, OverflowError) as e:
            self.expect(False, f"{what}: {e}")
            return None

    def reduced(self, limbs: Sequence, what: str, wide: bool = False) -> None:
        units = self.rep.units(limbs)
        for i, u in enumerate(units):
            rng = self.rep.reduced_range(i, wide)
            if rng and not rng[0] <= u <= rng[1]:
                self.expect(False, f"{what}: limb {i} = {u} is not reduced (range {rng})")
                return

    def same(self, limbs: Sequence, expected: int, what: str, wide: bool = False,
             reduced: bool = False) -> None:
        """limbs stand for expected (and are reduced if asked); their bytes are expected mod
        2^256 (2^512)."""
        got = self.value(limbs, what)
        if got is None:
            return
        if self.expect(got == expected, f"{what}: value {hex(got)}, expected {hex(expected)}"):
            if reduced:
                self.reduced(limbs, what, wide)
            bits = 512 if wide else 256
            b = self.lib.to_bytes(limbs, wide)
            self.expect(b == expected % (1 << bits),
                        f"{'product_' if wide else ''}to_bytes after {what}: {hex(b)}, "
                        f"expected {hex(expected % (1 << bits))}")


def random_value(rng: random.Random, bits: int = 255) -> int:
    """A test value below 2^bits: uniform, or built from 0x00/0xff/random bytes (long carry
    runs), or sparse, or dense (few bits clear)."""
    kind = rng.randrange(4)
    if kind == 0:
        v = rng.getrandbits(bits)
    elif kind == 1:
        v = int.from_bytes(bytes(rng.choice((0, 255, rng.randrange(256))) for _ in range(32)),
                           "little")
    else:
        v = 0
        for _ in range(rng.randrange(1, 6)):
            v |= 1 << rng.randrange(bits)
        if kind == 3:
            v ^= (1 << bits) - 1
    return v & ((1 << bits) - 1)


def edge_values(rep: Representation) -> list[int]:
    """0, 1, 2^255 - 1, 2^256 - 1, 2^p - 1, 2^p and 2^p + 1 at every limb boundary p (of a value
    and of a product below 2^256), every digit at its maximum, every digit at the balanced tie
    2^(w - 1) (doubles: each one carries), and alternating bit patterns."""
    vals = {0, 1, 2, 3, 2**64 - 1, 2**128 - 1, 2**254, 2**255 - 1, 2**255, 2**256 - 1,
            int("55" * 32, 16), int("aa" * 32, 16), int("0f" * 32, 16), int("f0" * 32, 16)}
    for p in set(rep.positions[1:]) | {p for p in rep.product_positions[1:] if p < 256}:
        vals |= {2**p - 1, 2**p, 2**p + 1}
    pw = list(zip(rep.positions, rep.widths()))
    vals.add(sum(((1 << w) - 1) << p for p, w in pw))
    vals.add(sum((1 << (w - 1)) << p for p, w in pw))
    vals.add(sum(((1 << (w - 1)) - 1) << p for p, w in pw))
    vals.add(sum(((1 << w) - 1) << p for i, (p, w) in enumerate(pw) if i % 2 == 0))
    return sorted(vals)


def check_value(ck: Checker, v: int) -> None:
    """from_bytes gives the reduced digits of v (target/host64 digits); to_bytes gives v back."""
    ck.inputs += 1
    limbs = ck.lib.from_bytes(v)
    expected = ck.rep.limbs_of(ck.rep.digits(v))
    if ck.expect(limbs == expected, f"from_bytes({hex(v)}): limbs {limbs}, expected {expected}"):
        ck.same(limbs, v, f"from_bytes({hex(v)})", reduced=True)


def check_pair(ck: Checker, x: int, y: int) -> None:
    """add, sub (limb by limb in the lazy representations; with carry/borrow out in radix64),
    carry and to_bytes of the difference (negative when x < y), mul of x, y and of x - y, y."""
    ck.inputs += 1
    rep, lib = ck.rep, ck.lib
    X, Y = lib.from_bytes(x), lib.from_bytes(y)
    diff = X
    for op, sign in (("add", 1), ("sub", -1)):
        R, c = lib.arith(op, X, Y)
        what = f"{op}(x={hex(x)}, y={hex(y)})"
        if rep.lazy_additions:
            limbwise = [u + sign * v for u, v in zip(rep.units(X), rep.units(Y))]
            ck.expect(rep.units(R) == limbwise, f"{what}: limbs {R} are not the limbwise {op}")
        ck.same(R, x + sign * y - sign * (c << 256), what)
        diff = R
    if rep.lazy_additions:
        ck.same(lib.carry(diff), x - y, f"carry(x - y), x={hex(x)}, y={hex(y)}", reduced=True)
    ck.same(lib.mul(X, Y), x * y, f"mul(x={hex(x)}, y={hex(y)})", wide=True, reduced=True)
    d = rep.value(diff)
    ck.same(lib.mul(diff, Y), d * y, f"mul(x - y, y), x={hex(x)}, y={hex(y)}", wide=True,
            reduced=True)


def check_chain(ck: Checker, rng: random.Random, k: int) -> None:
    """k random 255-bit operands combined by add/sub with random signs, then carried (radix64:
    exact with its carries and borrows counted)."""
    ck.inputs += 1
    rep, lib = ck.rep, ck.lib
    first = random_value(rng)
    acc, exact, carries = lib.from_bytes(first), first, 0
    for _ in range(k - 1):
        v, sign = random_value(rng), rng.choice((1, -1))
        acc, c = lib.arith("add" if sign > 0 else "sub", acc, lib.from_bytes(v))
        exact, carries = exact + sign * v, carries + sign * c
    what = f"+/- chain of {k} operands from {hex(first)}"
    ck.same(acc, exact - (carries << 256), what)
    if rep.lazy_additions:
        ck.same(lib.carry(acc), exact, f"carry after {what}", reduced=True)


def worst_operands(rep: Representation) -> list[tuple[str, list]]:
    """Reduced operands with every limb at its bound (the headroom model's worst case), and for
    doubles one with limb 2 lowered by 513: there the limb that passes 2^53 one operand past
    the bound is odd, so that chain loses exactness (tests/test_host64.py shows it)."""
    bounds = [rep.operand_bound(i) for i in range(rep.limbs)]
    out = [("the all-max operand", rep.limbs_of(bounds))]
    if rep.scaled:
        odd = [b - (513 if i == 2 else 0) for i, b in enumerate(bounds)]
        out.append(("the all-max operand with limb 2 lowered by 513", rep.limbs_of(odd)))
    return out


def check_headroom(ck: Checker) -> None:
    """+/- chains of exactly max_summands worst-case operands, then carry; mul of two operands
    that are sums of exactly mul_summands of them.  radix64 instead: its carry and borrow out
    at the edges."""
    rep, lib = ck.rep, ck.lib
    if not rep.lazy_additions:
        for x, y in ((2**255 - 1, 2**255 - 1), (2**256 - 1, 1), (2**256 - 1, 2**256 - 1), (0, 1)):
            check_pair(ck, x, y)
        return
    n, h = rep.max_summands, rep.mul_summands
    for name, w in worst_operands(rep):
        v = rep.value(w)
        for op, sign in (("add", 1), ("sub", -1)):
            ck.inputs += 1
            what = f"{op} chain of {n} x {name}"
            acc = lib.times(n, w, op)
            ck.same(acc, sign * n * v, what)
            ck.same(lib.carry(acc), sign * n * v, f"carry after {what}", reduced=True)
        ck.inputs += 1
        a, b = lib.times(h, w), lib.times(h, w, "sub")
        ck.same(lib.mul(a, a), (h * v) ** 2, f"mul of two sums of {h} x {name}", True, True)
        ck.same(lib.mul(a, b), -(h * v) ** 2, f"mul of +/- sums of {h} x {name}", True, True)


def check_unreduced(ck: Checker, rng: random.Random) -> None:
    """carry and to_bytes of random limbs anywhere a chain within the headroom can leave them
    (|limb i| <= max_summands bound_i), mul of random limbs within mul_summands bounds."""
    ck.inputs += 1
    rep, lib = ck.rep, ck.lib
    bounds = [rep.operand_bound(i) for i in range(rep.limbs)]
    units = [rng.randint(-rep.max_summands * b, rep.max_summands * b) for b in bounds]
    limbs = rep.limbs_of(units)
    v = rep.value(limbs)
    ck.same(limbs, v, f"unreduced limbs {units}")
    ck.same(lib.carry(limbs), v, f"carry(units {units})", reduced=True)
    a, b = ([rng.randint(-rep.mul_summands * b, rep.mul_summands * b) for b in bounds]
            for _ in range(2))
    va, vb = rep.value(rep.limbs_of(a)), rep.value(rep.limbs_of(b))
    ck.same(lib.mul(rep.limbs_of(a), rep.limbs_of(b)), va * vb, f"mul(units {a}, units {b})",
            wide=True, reduced=True)


def run_checks(ck: Checker, rng: random.Random, tests: int) -> None:
    edges = edge_values(ck.rep)
    core = [0, 1, 2**255 - 1, 2**256 - 1] + edges[-4:]
    for v in edges:
        check_value(ck, v)
    for _ in range(tests):
        check_value(ck, random_value(rng, 256))
    for x in edges:
        for y in core:
            check_pair(ck, x, y)
    for _ in range(tests):
        check_pair(ck, random_value(rng), random_value(rng))
    for _ in range(max(1, tests // 20)):
        check_chain(ck, rng, rng.randint(2, min(ck.rep.max_summands, 64) + 1))
    if 1 < ck.rep.max_summands <= 10_000:
        check_chain(ck, rng, ck.rep.max_summands)  # one real chain of the full length
    check_headroom(ck)
    if ck.rep.lazy_additions:
        for _ in range(max(1, tests // 10)):
            check_unreduced(ck, rng)


def build_library(source: HostSource, workdir: Path, int128: bool = True) -> HostLibrary:
    """Compile source as a shared library in workdir (without unsigned __int128 if not
    int128) and bind it."""
    out = Path(workdir) / f"lib{source.name}{'' if int128 else '_noint128'}.so"
    extra = ["-fPIC", "-shared"] + ([] if int128 else ["-DAVRMP_NO_INT128"])
    compile_c({f"{source.name}.c": source.c_text, f"{source.name}.h": source.h_text}, out, extra)
    return HostLibrary(out, source)


def verify_host(representation: str, tests: int = DEFAULT_TESTS, seed: int | None = None,
                int128: bool = True, source: HostSource | None = None) -> HostReport:
    """Compile the representation's C (or the given source) with the host compiler and check
    every function against Python integers: `tests` random values and pairs, edge values, random
    chains, unreduced limbs, and chains exactly at the headroom bounds."""
    rep_name = representation
    if source is None:
        source = emit(rep_name)
    elif source.representation != rep_name:
        raise AvrmpError(f"source {source.name} is {source.representation}, not {rep_name}: "
                         "pass the matching representation")
    seed = secrets.randbits(32) if seed is None else seed
    with tempfile.TemporaryDirectory(prefix="avrmp-host64-") as tmp:
        ck = Checker(build_library(source, Path(tmp), int128))
        run_checks(ck, random.Random(seed), tests)
    return HostReport(representation=rep_name, passed=not ck.failures, inputs=ck.inputs,
                      seed=seed, int128=int128, failures=ck.failures)
