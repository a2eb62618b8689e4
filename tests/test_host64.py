"""The 64-bit host target: the three representations of seed 004 as C, verified against Python
integers (random, edge and unreduced inputs, chains exactly at each headroom bound and one past
it), a broken function caught, the emitted text deterministic, the errors users see, and the
benchmark's table shape (never its timings)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from avrmp import __version__
from avrmp.bench.host64 import OPS, markdown, measure
from avrmp.errors import AvrmpError
from avrmp.target.host64 import TABLE, representation
from avrmp.techniques.host64 import REPRESENTATIONS, emit
from avrmp.verify.host64 import (
    build_library,
    find_compiler,
    verify_host,
    worst_operands,
    write_host_source,
)

TESTS = 200


def test_the_table_and_its_bounds() -> None:
    assert REPRESENTATIONS == ("radix64", "radix51", "double")
    r64, r51, dbl = TABLE
    assert (r64.limbs, r64.product_limbs, r64.lazy_additions) == (4, 8, 0)
    assert (r51.limbs, r51.product_limbs, r51.positions) == (5, 10, (0, 51, 102, 153, 204))
    assert dbl.positions == (0, 22, 43, 64, 85, 107, 128, 149, 170, 192, 213, 234)
    assert dbl.product_limbs == 24 and dbl.product_positions[-1] == 489
    # radix 2^51: 4096 summands; the carry then reaches 2^63 - 1 exactly, going down -2^63
    assert r51.max_summands == 4096 and r51.lazy_additions == 4095
    assert 4096 * (2**51 - 1) + (4096 * (2**51 - 1) >> 51) == 2**63 - 1
    assert -4096 * (2**51 - 1) + (-4096 * (2**51 - 1) >> 51) == -(2**63)
    assert r51.mul_summands == 64
    assert 64**2 * (2**255 - 1) ** 2 < 2**522 <= 65**2 * (2**255 - 1) ** 2
    # doubles: |units| <= 2^53; n 2^21 plus the carries keeps n just under 2^32
    assert dbl.max_summands == 2**32 - 1025 and dbl.mul_summands == 16
    assert dbl.max_summands * 2**21 < 2**53 < (dbl.max_summands + 1024) * 2**21 + 2**31


def test_reduced_digits_round_trip() -> None:
    for rep in TABLE:
        for v in (0, 1, 2**255 - 1, 2**256 - 1, 0x1234 << 200):
            d = rep.digits(v)
            assert rep.value(rep.limbs_of(d)) == v
            assert all(rep.reduced_range(i) is None or rep.reduced_range(i)[0] <= u
                       <= rep.reduced_range(i)[1] for i, u in enumerate(d))


@pytest.mark.parametrize("name", REPRESENTATIONS)
def test_verified_against_python(name: str) -> None:
    report = verify_host(name, tests=TESTS, seed=4)
    assert report.passed, report.first_failure()
    assert report.inputs > 2 * TESTS and report.seed == 4 and report.first_failure() is None


@pytest.mark.parametrize("name", ["radix64", "radix51"])
def test_verified_without_int128(name: str) -> None:
    """The 32-bit-halves fallback (AVRMP_NO_INT128) gives the same results."""
    report = verify_host(name, tests=TESTS // 2, seed=5, int128=False)
    assert report.passed, report.first_failure()
    assert not report.int128


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("host64")
    return {name: build_library(emit(name), tmp) for name in ("radix51", "double")}


@pytest.mark.parametrize("name", ["radix51", "double"])
def test_headroom_is_exact_at_the_bound_and_not_past_it(libs: dict, name: str) -> None:
    """max_summands worst-case operands added (or subtracted), then carried: exact.  One more
    operand: wrong (radix 2^51: a limb wraps past 2^63; doubles: the odd operand's limb passes
    2^53 at an odd value and rounds).  Likewise mul at mul_summands and one past it."""
    lib = libs[name]
    rep = lib.rep
    n, h = rep.max_summands, rep.mul_summands
    for label, w in worst_operands(rep):
        v = rep.value(w)
        for op, sign in (("add", 1), ("sub", -1)):
            carried = lib.carry(lib.times(n, w, op))
            assert rep.value(carried) == sign * n * v, (label, op)
            assert lib.to_bytes(carried) == (sign * n * v) % 2**256
        a = lib.times(h, w)
        assert rep.value(lib.mul(a, a)) == (h * v) ** 2, label
        past = lib.times(h + 1, w)
        assert rep.value(lib.mul(past, past)) != ((h + 1) * v) ** 2, label
    label, w = worst_operands(rep)[-1]
    v = rep.value(w)
    try:
        past = rep.value(lib.carry(lib.times(n + 1, w)))
    except ValueError:  # a double limb that is no longer a multiple of its weight
        past = None
    assert past != (n + 1) * v, f"{n + 1} x {label} should not be exact"


def test_radix64_carries_every_time(tmp_path: Path) -> None:
    lib = build_library(emit("radix64"), tmp_path)
    top = 2**255 - 1
    r, c = lib.arith("add", lib.from_bytes(top), lib.from_bytes(top))
    assert (lib.rep.value(r), c) == (2 * top, 0)  # two 255-bit operands never carry out
    r, c = lib.arith("add", lib.from_bytes(2**256 - 1), lib.from_bytes(1))
    assert (lib.rep.value(r), c) == (0, 1)
    r, c = lib.arith("sub", lib.from_bytes(0), lib.from_bytes(1))
    assert (lib.rep.value(r), c) == (2**256 - 1, 1)


@pytest.mark.parametrize("name, old, new, where", [
    ("radix64", "u128 t = (u128)a * b + c + d;", "u128 t = (u128)a * b + (c | d);", "mul"),
    ("double", "0x1.8p+74", "0x1.8p+73", "carry"),
    ("radix51", "*lo &= MASK51;", "*lo &= MASK51 >> 1;", "to_bytes"),
])
def test_a_broken_function_is_caught(name: str, old: str, new: str, where: str) -> None:
    """A dropped carry word in radix64's multiply-accumulate, the wrong rounding constant in
    the double carry, a wrong mask in the radix 2^51 carry: each is reported."""
    source = emit(name)
    assert old in source.c_text
    broken = dataclasses.replace(source, c_text=source.c_text.replace(old, new, 1))
    report = verify_host(name, tests=30, seed=1, source=broken)
    assert not report.passed
    assert where in report.first_failure()
    assert 0 < len(report.failures) <= 20


def test_emitted_text_is_deterministic_and_named() -> None:
    for name in REPRESENTATIONS:
        a, b = emit(name), emit(name)
        assert a == b
        rep = representation(name)
        assert a.name == rep.stem and a.representation == name
        assert f"avrmp {__version__}" in a.c_text and f"avrmp {__version__}" in a.h_text
        assert {f.split("_", 2)[2] for f in a.functions} >= {
            "from_bytes", "to_bytes", "add", "sub", "mul", "product_to_bytes"}
        assert ("carry" in {f.removeprefix(a.name + "_") for f in a.functions}) \
            == (name != "radix64")
        for f in a.functions:
            assert f"{f}(" in a.h_text and f"{f}(" in a.c_text
        other = emit(name, prefix="my_big")
        assert other.name == "my_big" and all(f.startswith("my_big_") for f in other.functions)
        assert "#include \"my_big.h\"" in other.c_text and "AVRMP_my_big_H" in other.h_text
        assert "#define my_big_LIMBS" in other.h_text  # the name's case: My_big would differ


def test_errors_users_see(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AvrmpError, match="radix64, radix51, double"):
        emit("radix32")
    with pytest.raises(AvrmpError, match="choose one of"):
        verify_host("float")
    with pytest.raises(AvrmpError, match="not a C identifier"):
        emit("radix51", prefix="9lives")
    with pytest.raises(AvrmpError, match="radix64, radix51, double"):
        measure(("radix16",), runs=1)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(AvrmpError, match=r"no C compiler \(install gcc\)"):
        find_compiler()


def test_write_host_source(tmp_path: Path) -> None:
    source = emit("double")
    c, h = write_host_source(source, tmp_path / "out")
    assert c.read_text() == source.c_text and h.read_text() == source.h_text


def test_bench_table_shape() -> None:
    rows = measure(runs=3, reps=16)
    assert [(r.op, r.mode) for r in rows] == [(o.name, o.mode) for o in OPS]
    for row in rows:
        assert list(row.ticks) == list(REPRESENTATIONS)
        measured = [t for t in row.ticks.values() if t is not None]
        assert measured and all(t > 0 for t in measured)
        assert min(x for x in row.ratio.values() if x is not None) == 1.0
        assert row.unit in ("rdtsc ticks", "ns") and row.runs == 3
        assert (row.ticks["radix64"] is None) == (row.op == "carry")
    table = markdown(rows)
    lines = table.strip().splitlines()
    assert lines[2].startswith("| operation | mode | radix64 | radix51 | double |")
    assert len(lines) == 4 + len(rows)
    assert all(line.count("|") == 7 for line in lines[2:])
    two = measure(("double", "radix51"), runs=1, reps=8)
    assert list(two[0].ticks) == ["double", "radix51"]


def test_gen_from_the_command_line(capsys, tmp_path) -> None:
    from cli_run import run

    status, _, _ = run(["gen", "mul", "--target", "host64", "--repr", "radix51", "-o",
                          tmp_path], capsys)
    assert status == 0 and (tmp_path / "avrmp_r51.c").is_file()
    assert "avrmp_r51_mul" in (tmp_path / "avrmp_r51.h").read_text()
    for argv, message in ((["--target", "host64"], "needs --repr"),
                          (["--repr", "radix51", "--bits", "64"], "host64 only"),
                          (["--target", "host64", "--repr", "nope"], "invalid choice")):
        status, _, err = run(["gen", "mul", *argv, "-o", tmp_path / "x"], capsys)
        assert status == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("flag", ["-ffast-math", "-funsafe-math-optimizations",
                                  "-fassociative-math"])
def test_the_double_representation_refuses_reassociating_flags(flag: str,
                                                               tmp_path: Path) -> None:
    """These flags let the compiler fold the carry's (x + C) - C to x: the file stops the build
    instead of computing wrong results."""
    import subprocess

    c, _ = write_host_source(emit("double"), tmp_path)
    flags = [flag, "-fno-signed-zeros", "-fno-trapping-math"] if "assoc" in flag else [flag]
    proc = subprocess.run([find_compiler(), "-O2", *flags, "-c", str(c), "-o",
                           str(tmp_path / "d.o")], capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "(x + C) - C" in proc.stderr


@pytest.mark.parametrize("flags", [[], ["-DAVRMP_NO_INT128"]])
def test_files_share_one_translation_unit(flags: list[str], tmp_path: Path) -> None:
    """Every representation, and one of them twice under two prefixes, included into one C file:
    their helpers' names are private to each file."""
    import subprocess

    sources = [emit(name) for name in REPRESENTATIONS] + [emit("radix51", "other")]
    for source in sources:
        write_host_source(source, tmp_path)
    one = tmp_path / "one.c"
    one.write_text("".join(f'#include "{s.name}.c"\n' for s in sources))
    proc = subprocess.run([find_compiler(), "-std=c99", "-pedantic", "-Wall", "-Wextra",
                           "-Werror", *flags, "-c", str(one), "-o", str(tmp_path / "one.o")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
