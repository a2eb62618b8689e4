"""The benchmark's plots, each with its legend outside the data:

* PATH: core cycles against operand bits, log-log, the papers' figures beside ours;
* PATH-relative: each algorithm's cycles divided by the best public code's (top row) and by the
  fastest figure of the seed papers (bottom row) at the same size, so that 5 % shows;
* PATH-per-product: core cycles per byte product (cycles / n^2, n operand bytes), the cost of
  the work itself, flat for a quadratic algorithm and falling for a subquadratic one.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from ..output_files import write_all
from .measure import Row
from .papers import best_paper, ratio_to_public

OPS = ("mul", "sqr")


def plot_paths(path: Path) -> list[Path]:
    """The files plot() writes for --plot path."""
    path = Path(path)
    return [path, path.with_name(f"{path.stem}-relative{path.suffix}"),
            path.with_name(f"{path.stem}-per-product{path.suffix}")]


def plot(rows: Sequence[Row], path: Path) -> list[Path]:
    """The three plots (see the module's docstring), written all or none; their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = plot_paths(path)
    ours = [r for r in rows if r.verified]
    style = _style(plt, ours)
    images = {}
    for draw, target in zip((_cycles, _relative, _per_product), paths):
        fig = draw(plt, ours, style)
        images[target] = _image(plt, fig, target.suffix[1:].lower())
    write_all(images)
    return paths


def _label(r: Row) -> str:
    return f"{r.algo} {r.variant}" + (f" {r.params}" if r.params else "")


def _series(rows: Sequence[Row], op: str) -> dict[str, list[Row]]:
    """Our routines for op, one series per algorithm, variant and parameters, by size."""
    out: dict[str, list[Row]] = {}
    for r in sorted(rows, key=lambda r: r.bits):
        if r.op == op:
            out.setdefault(_label(r), []).append(r)
    return out


def _style(plt, rows: Sequence[Row]) -> dict[str, dict]:
    """One colour and marker per series, the same in every panel and plot."""
    labels = sorted({_label(r) for r in rows})
    colours = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
    return {label: {"color": colours[i % len(colours)], "marker": "osD^v<>"[i % 7]}
            for i, label in enumerate(labels)}


def _no_data(ax, op: str, rows: Sequence[Row]) -> bool:
    """True (and the panel says so) when the benchmark ran no routine for op."""
    if any(r.op == op for r in rows):
        return False
    ax.text(0.5, 0.5, f"no {op} routines in this run", ha="center", va="center",
            transform=ax.transAxes)
    return True


def _plot_series(ax, rows: Sequence[Row], op: str, style: dict[str, dict], value) -> list[float]:
    """One line per routine family of op: (bits, value(row)), rows whose value is None left
    out; returns the values drawn."""
    shown = []
    for label, series in _series(rows, op).items():
        pts = [(r.bits, value(r)) for r in series if value(r) is not None]
        if pts:
            ax.plot(*zip(*pts), label=label, **style[label])
            shown += [y for _, y in pts]
    return shown


def _outside_legend(ax) -> None:
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def _size_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xlabel("operand bits")
    ax.grid(True, which="both", alpha=0.3)


def _cycles(plt, rows: Sequence[Row], style: dict[str, dict]):
    fig, axes = plt.subplots(2, 1, figsize=(11, 10))
    for ax, op in zip(axes, OPS):
        if _no_data(ax, op, rows):
            continue
        _plot_series(ax, rows, op, style, lambda r: r.core_cycles)
        refs = sorted({(r.bits, ref["cycles"]) for r in rows if r.op == op
                       for ref in r.references})
        ax.plot([b for b, _ in refs], [c for _, c in refs], ls="none", marker="x",
                color="black", alpha=0.6, label="published figures (seed papers, best public)")
        _size_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel("core cycles (ATmega128)")
        ax.set_title(f"{op}: cycles against operand size (x: published figures)")
        _outside_legend(ax)
    fig.tight_layout()
    return fig


def _ratio_to_public(r: Row) -> float | None:
    return ratio_to_public(r.op, r.bits, r.core_cycles, r.abi_cycles)


def _ratio_to_papers(r: Row) -> float | None:
    best = best_paper(r.op, r.bits)
    return None if best is None else r.core_cycles / best


def _relative(plt, rows: Sequence[Row], style: dict[str, dict]):
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    panels = [(_ratio_to_public, "the best public code (OsEID, Hutter-Schwabe)"),
              (_ratio_to_papers, "the fastest figure of the seed papers")]
    for row_axes, (ratio, against) in zip(axes, panels):
        for ax, op in zip(row_axes, OPS):
            if _no_data(ax, op, rows):
                continue
            shown = _plot_series(ax, rows, op, style, ratio)
            ax.axhline(1.0, color="black", lw=1, ls="--", label="= the reference")
            _size_axis(ax)
            _ratio_axis(ax, shown)
            ax.set_title(f"{op}: relative to {against}", fontsize=10)
            _outside_legend(ax)
    fig.tight_layout()
    return fig


RATIO_TICKS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 1.75, 2.0)


def _ratio_axis(ax, shown: list[float]) -> None:
    """A log scale from just below the fastest ratio to 2 at most (slower series leave the top),
    ticked finely enough to read 5 %."""
    low = min(min(shown, default=1.0) * 0.97, 0.97)
    high = max(min(2.0, max(shown, default=1.0) * 1.05), 1.05)
    fine = high / low < 2.5  # on a wide scale 0.95 and 1.05 would print over 1
    ticks = [t for t in RATIO_TICKS if low <= t <= high and (fine or t not in (0.95, 1.05))]
    ax.set_yscale("log")
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(low, high)
    ax.set_ylabel("cycles / reference cycles (below 1: faster; cut at 2)")


def _per_product(plt, rows: Sequence[Row], style: dict[str, dict]):
    from matplotlib.ticker import FuncFormatter

    fig, axes = plt.subplots(2, 1, figsize=(11, 10))
    for ax, op in zip(axes, OPS):
        if _no_data(ax, op, rows):
            continue
        _plot_series(ax, rows, op, style, lambda r: r.core_cycles / (r.bits // 8) ** 2)
        _size_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel("core cycles / n²  (n = operand bytes)")
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.set_title(f"{op}: cycles per byte product")
        _outside_legend(ax)
    fig.tight_layout()
    return fig


def _image(plt, fig, fmt: str) -> bytes:
    out = io.BytesIO()
    try:
        fig.savefig(out, format=fmt, dpi=100, bbox_inches="tight")
    finally:
        plt.close(fig)
    return out.getvalue()
