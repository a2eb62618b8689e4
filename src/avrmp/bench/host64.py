"""The host64 benchmark: every operation of every representation timed in ONE process (a C
harness compiled -O2 with the generated sources as separate translation units, so no call can be
inlined or optimised away), interleaved run by run, the median of many runs per operation;
reported as ratios between the representations, since absolute times on a shared machine are
noise.  The timer is rdtsc (__rdtsc from <x86intrin.h>) on x86-64, clock_gettime(CLOCK_MONOTONIC)
nanoseconds elsewhere; the output says which."""

from __future__ import annotations

import platform
import random
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import AvrmpError
from ..target.host64 import REPRESENTATIONS, representation
from ..techniques.host64 import HostSource, emit
from ..verify.host64 import compile_c, find_compiler

DEFAULT_RUNS = 1001
DEFAULT_REPS = 256  # calls per timed sample (mul: a quarter of it)
INPUT_SEED = 4  # the fixed operands, the same for every representation


@dataclass(frozen=True)
class Op:
    """One timed operation: `setup` once per sample, then `body` `reps / scale` times
    ({f}: the C prefix, {v}: the harness's variable prefix, i the loop counter)."""
    name: str
    mode: str  # "chained": each call takes the previous call's result; "independent": not
    setup: str
    body: str
    scale: int = 1
    radix64_body: str | None = None  # radix64 has no carry: what it runs instead
    note: str = ""


RESET = "memcpy({v}r, {v}x, sizeof {v}r);"
ADD16 = "for (j = 0; j < 16; j++)\n            {f}_add({v}r, {v}r, {v}y);"
OPS: tuple[Op, ...] = (
    Op("from_bytes", "independent", "", "{f}_from_bytes({v}s, {v}in);"),
    Op("to_bytes", "independent", "", "{f}_to_bytes({v}out, {v}x);"),
    Op("add", "chained", RESET, "{f}_add({v}r, {v}r, {v}y);"),
    Op("add", "independent", "", "{f}_add({v}s, {v}x, {v}y);"),
    Op("sub", "chained", RESET, "{f}_sub({v}r, {v}r, {v}y);"),
    Op("sub", "independent", "", "{f}_sub({v}s, {v}x, {v}y);"),
    Op("carry", "chained", "{f}_add({v}r, {v}x, {v}y);", "{f}_carry({v}r);",
       radix64_body="", note="radix64 has nothing to carry"),
    Op("add, reduced", "chained", RESET, "{f}_add({v}r, {v}r, {v}y);\n        {f}_carry({v}r);",
       radix64_body="{f}_add({v}r, {v}r, {v}y);", note="add then carry (radix64: add)"),
    Op("16 adds, reduced", "chained", RESET, ADD16 + "\n        {f}_carry({v}r);", scale=8,
       radix64_body=ADD16, note="16 adds then one carry (radix64: 16 adds)"),
    Op("mul", "chained", "memcpy({v}p[0], {v}x, sizeof {v}x);",
       "{f}_mul({v}p[(i + 1) & 1], {v}p[i & 1], {v}y);", scale=4,
       note="the next call multiplies the low half of this product"),
    Op("mul", "independent", "", "{f}_mul({v}p[0], {v}x, {v}y);", scale=4),
    Op("product_to_bytes", "independent", "{f}_mul({v}q, {v}x, {v}y);",
       "{f}_product_to_bytes({v}out, {v}q);", scale=2),
)


@dataclass(frozen=True)
class HostBenchRow:
    op: str
    mode: str
    ticks: dict[str, float | None]  # median per call, per representation (None: not applicable)
    ratio: dict[str, float | None]  # ticks over the fastest representation's in this row
    unit: str  # "rdtsc ticks" or "ns"
    runs: int
    calls: int  # calls per timed sample
    machine: str
    note: str = ""


TIMER_C = """\
#if defined(__x86_64__) && !defined(AVRMP_BENCH_CLOCK)
#include <x86intrin.h>
#define TIMER "rdtsc ticks"
static uint64_t now(void)
{
    return __rdtsc();
}
#else
#include <time.h>
#define TIMER "ns"
static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif
"""

MAIN_C = """\
static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long runs = argc > 1 ? atol(argv[1]) : 101, reps = argc > 2 ? atol(argv[2]) : 256, run;
    size_t k, count = sizeof benches / sizeof benches[0];
    double *samples = malloc(count * (size_t)runs * sizeof(double));

    if (samples == NULL || runs < 1 || reps < 8)
        return 2;
    setup();
    for (k = 0; k < count; k++) /* warm up caches and branch predictors */
        benches[k].run(reps / benches[k].scale);
    for (run = 0; run < runs; run++) {
        for (k = 0; k < count; k++) { /* every operation in every run: drift hits all alike */
            long n = reps / benches[k].scale;
            uint64_t t0 = now(), t1;
            benches[k].run(n);
            t1 = now();
            samples[k * (size_t)runs + (size_t)run] = (double)(t1 - t0) / (double)n;
        }
    }
    printf("timer %s\\n", TIMER);
    for (k = 0; k < count; k++) {
        double *s = samples + k * (size_t)runs;
        qsort(s, (size_t)runs, sizeof(double), by_value);
        printf("%s|%s|%s|%.3f|%ld\\n", benches[k].rep, benches[k].op, benches[k].mode,
               s[runs / 2], reps / benches[k].scale);
    }
    printf("sink %u\\n", sink());
    free(samples);
    return 0;
}
"""


def operands() -> tuple[bytes, bytes]:
    """The two fixed 255-bit operands every representation works on."""
    rng = random.Random(INPUT_SEED)
    return tuple(rng.getrandbits(255).to_bytes(32, "little") for _ in range(2))


def c_bytes(data: bytes) -> str:
    return "{" + ", ".join(f"0x{b:02x}" for b in data) + "}"


def bench_function(index: int, src: HostSource, op: Op) -> str | None:
    """The C function timing op on src's representation (None when it does not apply)."""
    body = op.radix64_body if src.representation == "radix64" and op.radix64_body is not None \
        else op.body
    if not body:
        return None
    f, v = src.name, f"b_{src.name}_"
    setup = op.setup.format(f=f, v=v)
    lines = [f"static void bench_{index}(long n) /* {src.representation}: {op.name}, {op.mode} */",
             "{", "    long i;"] + (["    int j;"] if "j++" in body else []) + \
            ([f"    {setup}"] if setup else []) + \
            ["    for (i = 0; i < n; i++) {", f"        {body.format(f=f, v=v)}", "    }", "}"]
    return "\n".join(lines)


def harness(sources: Sequence[HostSource]) -> str:
    """The benchmark program: the timer, per representation its operands, one function per
    (representation, operation), the table of them, and main (runs x table, medians)."""
    x, y = operands()
    parts = ["/* avrmp host64 benchmark harness (generated by avrmp.bench.host64). */",
             "#define _POSIX_C_SOURCE 199309L",
             "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>"]
    parts += [f"#include \"{s.name}.h\"" for s in sources] + [TIMER_C]
    parts += [f"static const unsigned char operand_x[32] = {c_bytes(x)};",
              f"static const unsigned char operand_y[32] = {c_bytes(y)};"]
    table, setup, sink = [], [], []
    for s in sources:
        rep, v = representation(s.representation), f"b_{s.name}_"
        n, m, t = rep.limbs, rep.product_limbs, rep.c_limb
        parts.append(f"static {t} {v}x[{n}], {v}y[{n}], {v}r[{n}], {v}s[{n}], {v}p[2][{m}], "
                     f"{v}q[{m}];\nstatic unsigned char {v}in[32], {v}out[64];")
        setup += [f"    memcpy({v}in, operand_x, 32);", f"    {s.name}_from_bytes({v}x, operand_x);",
                  f"    {s.name}_from_bytes({v}y, operand_y);"]
        sink += [f"    {s.name}_to_bytes({v}out, {v}r);",
                 f"    for (i = 0; i < 64; i++)\n        h = h * 31u + {v}out[i];"]
        for op in OPS:
            fn = bench_function(len(table), s, op)
            if fn:
                parts.append(fn)
                table.append(f"    {{\"{rep.name}\", \"{op.name}\", \"{op.mode}\", "
                             f"bench_{len(table)}, {op.scale}}},")
    parts.append("static void setup(void)\n{\n" + "\n".join(setup) + "\n}")
    parts.append("static unsigned sink(void) /* results are used: nothing is dead code */\n{\n"
                 "    unsigned h = 0;\n    size_t i;\n\n" + "\n".join(sink) + "\n    return h;\n}")
    parts.append("struct bench {\n    const char *rep, *op, *mode;\n    void (*run)(long);\n"
                 "    long scale;\n};\n\nstatic const struct bench benches[] = {\n"
                 + "\n".join(table) + "\n};")
    return "\n\n".join(parts + [MAIN_C])


def machine(cflags: Sequence[str] = ()) -> str:
    """The CPU (from /proc/cpuinfo where there is one), the compiler's first line and flags."""
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = f"{line.split(':', 1)[1].strip()} ({platform.machine()})"
                break
    except OSError:
        pass
    cc = find_compiler()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    first = (version.stdout.splitlines() or [Path(cc).name])[0]
    return f"{cpu}, {first} " + " ".join(["-O2", *cflags])


def run_harness(sources: Sequence[HostSource], runs: int, reps: int, progress: bool,
                cflags: Sequence[str] = ()) -> list[str]:
    """Compile (CFLAGS of verify/host64 plus cflags) and run the harness; its output lines."""
    files = {f"{s.name}{ext}": text for s in sources
             for ext, text in ((".c", s.c_text), (".h", s.h_text))}
    files["bench_host64.c"] = harness(sources)
    with tempfile.TemporaryDirectory(prefix="avrmp-bench-host64-") as tmp:
        if progress:
            print(f"host64 bench: compiling {len(sources)} representations", file=sys.stderr)
        exe = compile_c(files, Path(tmp) / "bench_host64", cflags)
        if progress:
            print(f"host64 bench: {runs} runs of {reps} calls per operation", file=sys.stderr)
        try:
            proc = subprocess.run([str(exe), str(runs), str(reps)], capture_output=True,
                                  text=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            raise AvrmpError("the host64 benchmark took over 300 s: use fewer runs") from None
    if proc.returncode:
        raise AvrmpError(f"the host64 benchmark failed (status {proc.returncode}): "
                         "runs must be >= 1 and reps >= 8")
    return proc.stdout.splitlines()


def measure(representations: Sequence[str] = REPRESENTATIONS, runs: int = DEFAULT_RUNS,
            progress: bool = False, reps: int = DEFAULT_REPS,
            cflags: Sequence[str] = ()) -> list[HostBenchRow]:
    """Median time per call of every operation (OPS) of every representation, all measured in
    one process, run after run interleaved; one row per operation and mode.  cflags are added
    to the compiler flags (e.g. "-fno-tree-vectorize", to see what vectorisation changes)."""
    if runs < 1 or reps < 8:
        raise AvrmpError("host64 bench needs runs >= 1 and reps >= 8: raise them")
    sources = [emit(r) for r in dict.fromkeys(representations)]
    lines = run_harness(sources, runs, reps, progress, cflags)
    unit = lines[0].removeprefix("timer ")
    found = {}
    for line in lines[1:]:
        if line.count("|") == 4:
            rep, op, mode, ticks, calls = line.split("|")
            found[rep, op, mode] = (float(ticks), int(calls))
    names, where = [s.representation for s in sources], machine(cflags)
    rows = []
    for op in OPS:
        ticks = {r: found.get((r, op.name, op.mode), (None, 0))[0] for r in names}
        best = min((t for t in ticks.values() if t is not None), default=None)
        ratio = {r: (t / best if t is not None and best else None) for r, t in ticks.items()}
        calls = max(found.get((r, op.name, op.mode), (None, 0))[1] for r in names)
        rows.append(HostBenchRow(op.name, op.mode, ticks, ratio, unit, runs, calls, where,
                                 op.note))
    return rows


def markdown(rows: Sequence[HostBenchRow]) -> str:
    """The rows as a Markdown table: per representation the median per call and, in brackets,
    its ratio to the fastest representation in the row."""
    if not rows:
        return "(no host64 measurements)\n"
    names = list(rows[0].ticks)
    head = (f"Median {rows[0].unit} per call, over {rows[0].runs} runs of {rows[0].calls} calls "
            f"per operation (fewer for mul), all representations in one process; "
            f"{rows[0].machine}.  In brackets: time over the fastest representation in the row.")
    out = [head, "", "| operation | mode | " + " | ".join(names) + " | note |",
           "|---|---|" + "---:|" * len(names) + "---|"]
    for r in rows:
        cells = [f"{r.ticks[n]:.1f} ({r.ratio[n]:.2f})" if r.ticks[n] is not None else "-"
                 for n in names]
        out.append(f"| {r.op} | {r.mode} | " + " | ".join(cells) + f" | {r.note} |")
    return "\n".join(out) + "\n"
