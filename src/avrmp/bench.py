"""The benchmark: generate, verify and measure a catalog of Specs; tables, JSON and plots."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from .errors import AvrmpError
from .generate import generate, write_atomic, write_routine
from .mcu import DEFAULT_MCU
from .papers import references
from .spec import Spec
from .toolchain import build_firmware
from .verify import DEFAULT_TESTS, verify_firmware


@dataclass
class Row:
    op: str
    bits: int
    algo: str
    variant: str
    mcu: str
    params: str
    core_cycles: int
    abi_cycles: int
    code_bytes: int
    core_bytes: int
    stack_bytes: int
    ld: int
    st: int
    mul: int
    push_pop: int
    verified: bool
    tests: int
    failure: str
    model_cycles: int | None
    verify_seconds: float
    references: list[dict] = field(default_factory=list)


def _params(spec: Spec) -> str:
    keys = ("levels", "d", "e", "looped")
    return " ".join(f"{k}={getattr(spec, k)}" for k in keys if getattr(spec, k) not in (None, False))


def measure(spec: Spec, tests: int = DEFAULT_TESTS, workdir: Path | None = None) -> Row:
    routine = generate(spec)
    with tempfile.TemporaryDirectory(prefix="avrmp-") as tmp:
        out = Path(workdir or tmp)
        asm, _ = write_routine(routine, out)
        fw = build_firmware(asm, spec.symbol, spec.mcu, out)
        start = time.perf_counter()
        int_args = (spec.operand_bytes,) if spec.runtime_length else ()
        report = verify_firmware(fw, spec.op, spec.operand_bytes, spec.variant, tests,
                                 int_args=int_args)
        seconds = time.perf_counter() - start
    c = routine.classes
    refs = [
        {"source": s, "cycles": cyc, "bytes": size}
        for s, cyc, size in references(spec.op, spec.algo, spec.variant, spec.bits)
    ]
    return Row(
        op=spec.op, bits=spec.bits, algo=spec.algo, variant=spec.variant, mcu=spec.mcu,
        params=_params(spec), core_cycles=report.core_cycles, abi_cycles=report.abi_cycles,
        code_bytes=routine.code_bytes, core_bytes=routine.core_bytes,
        stack_bytes=max(0, report.stack_depth - len(routine.saved)),
        ld=c.get("LD", 0), st=c.get("ST", 0), mul=c.get("MUL", 0),
        push_pop=c.get("PUSH", 0) + c.get("POP", 0),
        verified=report.passed, tests=report.inputs, failure=report.first_failure(),
        model_cycles=routine.model_cycles, verify_seconds=round(seconds, 3), references=refs,
    )


def run(specs: Sequence[Spec], tests: int = DEFAULT_TESTS, progress: bool = True) -> list[Row]:
    rows = []
    bar = tqdm(specs, desc="bench", unit="routine", disable=not progress, leave=False)
    for spec in bar:
        bar.set_postfix_str(f"{spec.op} {spec.bits} {spec.algo} {spec.variant}")
        rows.append(measure(spec, tests))
    return rows


def catalog(
    ops: Iterable[str] | None = None,
    bits: Iterable[int] | None = None,
    algos: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
    mcu: str = "atmega128",
    params: dict[str, Iterable[int] | None] | None = None,
) -> list[Spec]:
    """The default benchmark, filtered by the given lists (None = everything in the catalog).
    params: algorithm parameters to sweep ({"e": [2, 4, 8]}): a routine that takes the parameter
    is run once per value instead of with its default; the others are left out."""
    from .algorithms import ALGORITHMS, DEFAULT_CATALOG

    sweeps = [{}]
    for key, values in (params or {}).items():
        if values:
            sweeps = [{**s, key: v} for s in sweeps for v in values]

    specs = []
    for op, algo, variant, sizes, *extra in DEFAULT_CATALOG:
        looped = bool(extra and extra[0])  # optional fifth field: looped
        if ops and op not in ops or algos and algo not in algos:
            continue
        if variants and variant not in variants:
            continue
        for b in (bits or sizes):
            if bits and b not in bits:
                continue
            for sweep in sweeps:
                try:
                    spec = Spec(op, b, algo, variant=variant, mcu=mcu, looped=looped, **sweep)
                except AvrmpError:
                    if not bits and mcu == DEFAULT_MCU and not sweep:
                        raise
                    continue  # not offered at this size, on this MCU, or with this parameter
                if spec in specs or mcu != DEFAULT_MCU and not runs_on_mcu(spec):
                    continue
                specs.append(spec)
    if not specs:
        known = ", ".join(ALGORITHMS)
        raise AvrmpError(f"the selection matches no routine in the catalog (algorithms: {known})")
    return specs


def runs_on_mcu(spec: Spec) -> bool:
    """Whether the routine fits the MCU: operand buffers (with the runner's guards) plus stack in
    SRAM, and the generated code in flash (and in RCALL reach for the no-MUL subroutine)."""
    from . import karatsuba_large
    from .mcu import get_mcu

    mcu = get_mcu(spec.mcu)
    n = spec.operand_bytes
    buffers = spec.result_bytes + spec.n_inputs * n + 16 * (spec.n_inputs + 2)
    stack = 48 + 20 + (n + 8 if spec.looped and spec.algo == "operand-caching" else 8)
    stack += karatsuba_large.stack_estimate(spec)  # large Karatsuba: frames of its memory levels
    if buffers + stack > mcu.sram_bytes:
        return False
    try:
        generate(spec)
    except AvrmpError:
        return False
    return True


def _ref_text(row: Row) -> str:
    return "; ".join(f"{r['source']}: {r['cycles']}" + (f" ({r['bytes']} B)" if r["bytes"] else "")
                     for r in row.references)


def markdown(rows: Sequence[Row]) -> str:
    head = ("| op | bits | algo | variant | core cycles | ABI cycles | code bytes | stack | "
            "LD | ST | MUL | verified | papers (core cycles, bytes) |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        ok = f"yes ({r.tests})" if r.verified else f"NO: {r.failure}"
        algo = r.algo + (f" {r.params}" if r.params else "")
        lines.append(
            f"| {r.op} | {r.bits} | {algo} | {r.variant} | {r.core_cycles} | {r.abi_cycles} | "
            f"{r.code_bytes} | {r.stack_bytes} | {r.ld} | {r.st} | {r.mul} | {ok} | {_ref_text(r)} |"
        )
    total = sum(r.tests for r in rows)
    seconds = sum(r.verify_seconds for r in rows)
    lines += ["", f"Verification harness: {len(rows)} routines, {total} inputs, {seconds:.1f} s of "
              "simulation in all" + "".join(
                  f"; {r.op} {r.bits} {r.algo} {r.variant}: {r.tests} inputs in "
                  f"{r.verify_seconds:.2f} s" for r in rows
                  if (r.op, r.bits, r.algo, r.variant) == ("mul", 256, "karatsuba", "branchfree"))
              + "."]
    return "\n".join(lines + squaring_ratios(rows)) + "\n"


def squaring_ratios(rows: Sequence[Row]) -> list[str]:
    """Markdown lines comparing branch-free Karatsuba squaring with multiplication of the same size
    (seed 003: squaring up to 44 % faster), for the sizes the rows have both of."""
    core = {(r.op, r.bits): r.core_cycles for r in rows
            if r.algo == "karatsuba" and r.variant == "branchfree" and r.verified and not r.params}
    sizes = sorted(b for op, b in core if op == "sqr" and ("mul", b) in core)
    if not sizes:
        return []
    out = ["", "Karatsuba squaring against multiplication (branch-free, core cycles):", "",
           "| bits | mul | sqr | sqr / mul | squaring saves |", "|---|---|---|---|---|"]
    for b in sizes:
        m, q = core[("mul", b)], core[("sqr", b)]
        out.append(f"| {b} | {m} | {q} | {q / m:.3f} | {100 * (1 - q / m):.1f} % |")
    return out


def write_json(rows: Sequence[Row], path: Path) -> None:
    write_atomic(path, json.dumps([asdict(r) for r in rows], indent=1) + "\n")


def plot(rows: Sequence[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, op in zip(axes, ("mul", "sqr")):
        series: dict[str, list[tuple[int, int]]] = {}
        for r in rows:
            if r.op == op and r.verified:
                label = f"{r.algo} {r.variant}" + (f" {r.params}" if r.params else "")
                series.setdefault(label, []).append((r.bits, r.core_cycles))
        for label, pts in sorted(series.items()):
            pts.sort()
            ax.plot([b for b, _ in pts], [c for _, c in pts], marker="o", label=label)
        refs: dict[str, list[tuple[int, int]]] = {}
        for r in rows:
            if r.op == op:
                for ref in r.references:
                    refs.setdefault(ref["source"], []).append((r.bits, ref["cycles"]))
        for label, pts in sorted(refs.items()):
            pts = sorted(set(pts))
            ax.plot([b for b, _ in pts], [c for _, c in pts], ls="none", marker="x", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("operand bits")
        ax.set_ylabel("core cycles (ATmega)")
        ax.set_title(f"{op}: cycles vs operand size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(tmp, dpi=110)
        tmp.replace(path)
    except OSError as e:
        if tmp.parent.is_dir():
            tmp.unlink(missing_ok=True)
        raise AvrmpError(
            f"cannot write {path}: {e.strerror}: choose a writable --plot path"
        ) from None
    finally:
        plt.close(fig)


README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"


def update_readme(path: Path, table: str) -> None:
    """Put the freshly measured table between the bench markers of a markdown file."""
    try:
        text = path.read_text()
    except OSError as e:
        raise AvrmpError(f"cannot read {path}: {e.strerror}") from None
    if README_BEGIN not in text or README_END not in text:
        raise AvrmpError(f"{path} has no {README_BEGIN} ... {README_END} markers")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    write_atomic(path, f"{head}{README_BEGIN}\n{table}{README_END}{tail}")
