"""The benchmark's plot: cycles against operand bits, log-log, the papers' figures beside ours."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import AvrmpError
from .measure import Row


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
