"""The benchmark's results as text: the markdown table (for bench/results.md and the README),
JSON for tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..errors import AvrmpError
from ..output_files import write_atomic
from .measure import Row
from .papers import RECORDS_MCU, ratio_to_public


def _ref_text(row: Row) -> str:
    return "; ".join(f"{r['source']}: {r['cycles']}" + (f" ({r['bytes']} B)" if r["bytes"] else "")
                     for r in row.references)


RATIO_NOTE = ("Against the best public code: our cycles over the strongest public record at the "
              "size (OsEID, Hutter-Schwabe), core or ABI cycles as the record gives them; below 1 "
              "is faster.")


def markdown(rows: Sequence[Row]) -> str:
    head = ("| op | bits | algo | variant | core cycles | ABI cycles | code bytes | stack | "
            "LD | ST | MUL | verified | against the best public code | "
            "papers (core cycles, bytes) |")
    lines = []
    other_parts = sorted({r.mcu for r in rows} - {RECORDS_MCU})
    if other_parts:
        lines += [(f"Measured on {', '.join(other_parts)}: the records and the papers' figures "
                   f"are {RECORDS_MCU} timing, so those columns are empty in its rows."), ""]
    lines += [head, "|" + "---|" * 14]
    for r in rows:
        ok = f"yes ({r.tests})" if r.verified else f"NO: {r.failure}"
        algo = r.algo + (f" {r.params}" if r.params else "")
        ours = r.mcu == RECORDS_MCU
        ratio = ratio_to_public(r.op, r.bits, r.core_cycles, r.abi_cycles) if ours else None
        lines.append(
            f"| {r.op} | {r.bits} | {algo} | {r.variant} | {r.core_cycles} | {r.abi_cycles} | "
            f"{r.code_bytes} | {r.stack_bytes} | {r.ld} | {r.st} | {r.mul} | {ok} | "
            f"{'' if ratio is None else f'{ratio:.3f}'} | {_ref_text(r) if ours else ''} |"
        )
    lines += ["", RATIO_NOTE]
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


def write_json(rows: Sequence, path: Path) -> None:
    """Rows of any benchmark (dataclasses: Row, ArmRow) as a JSON list."""
    write_atomic(path, json.dumps([asdict(r) for r in rows], indent=1) + "\n")


README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"


def update_readme(path: Path, table: str, markers: tuple[str, str] = (README_BEGIN, README_END)
                  ) -> None:
    """Put the freshly measured table between the markers (the AVR bench's by default) of a
    markdown file."""
    head, tail = readme_around(path, markers)
    write_atomic(path, f"{head}{markers[0]}\n{table}{markers[1]}{tail}")


def readme_around(path: Path, markers: tuple[str, str] = (README_BEGIN, README_END)
                  ) -> tuple[str, str]:
    """The markdown file's text before its begin marker and after its end marker (a one-line
    error if it cannot be read or lacks them): the bench checks this before it measures."""
    begin, end = markers
    try:
        text = path.read_text()
    except OSError as e:
        raise AvrmpError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise AvrmpError(f"cannot read {path}: it is not UTF-8 text") from None
    if begin not in text or end not in text.split(begin, 1)[1]:
        raise AvrmpError(f"{path} has no {begin} ... {end} markers (in that order)")
    if text.count(begin) > 1 or text.count(end) > 1:  # one table would stay stale
        raise AvrmpError(f"{path} has the {begin} ... {end} markers more than once: keep one pair")
    head, rest = text.split(begin, 1)
    return head, rest.split(end, 1)[1]
