"""Leaderboard plots as PNG files: learning curves with bands across seeds, score distributions,
and the overall IQM. Uses matplotlib's object API with the Agg canvas (no pyplot, no display)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

Points = Sequence[tuple[int, float]]
CurveSet = Mapping[str, Sequence[Points]]
"""Algorithm -> one (iteration, value) series per seed."""

_PALETTE = [f"C{i}" for i in range(10)]
# PNG metadata without the matplotlib version, so the same store gives byte-identical plots.
_METADATA = {"Software": None}


def label(text: str, width: int = 40) -> str:
    """Text for matplotlib shown literally ('$' would start mathtext), cut to ``width`` characters."""
    text = str(text)
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.replace("$", r"\$")


def colors(algs: Sequence[str]) -> dict[str, str]:
    """A stable colour per algorithm (by sorted name), shared by every plot."""
    return {alg: _PALETTE[i % len(_PALETTE)] for i, alg in enumerate(sorted(algs))}


def mean_band(runs: Sequence[Points]) -> pd.DataFrame:
    """Per iteration: mean over the seeds that logged it, std (where 2+ seeds did) and count."""
    frame = pd.DataFrame({i: pd.Series(dict(points), dtype=float) for i, points in enumerate(runs)})
    frame = frame.sort_index()
    return pd.DataFrame(
        {"mean": frame.mean(axis=1), "std": frame.std(axis=1, ddof=1), "n": frame.count(axis=1)}
    )


def learning_curves(panels: Sequence[tuple[str, CurveSet]], palette: Mapping[str, str], path: Path) -> Path:
    """One panel per (title, curves): mean over seeds with a ±1 std band; saved as PNG."""
    figure = Figure(figsize=(5.2 * len(panels), 3.6), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(panels), squeeze=False))[0]
    for ax, (title, curves) in zip(axes, panels, strict=True):
        for alg in sorted(curves):
            stats = mean_band(curves[alg])
            if stats.empty:
                continue
            color = palette.get(alg, "C0")
            x = stats.index.to_numpy()
            seeds = int(stats["n"].max())
            ax.plot(
                x, stats["mean"], color=color, marker="o", markersize=2.5, label=f"{label(alg)} (n={seeds})"
            )
            band = stats[stats["n"] >= 2]
            if not band.empty:
                ax.fill_between(
                    band.index.to_numpy(),
                    band["mean"] - band["std"],
                    band["mean"] + band["std"],
                    color=color,
                    alpha=0.2,
                    linewidth=0,
                )
        ax.set_title(label(title), fontsize=10)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8, title="mean ± 1 std over seeds", title_fontsize=7)
    figure.savefig(path, dpi=100, metadata=_METADATA)
    return path


def score_distribution(
    scores: Mapping[str, Sequence[float]], metric: str, palette: Mapping[str, str], path: Path
) -> Path:
    """Final scores of every seed per algorithm (dots) with each algorithm's mean (bar)."""
    algs = sorted(scores)
    figure = Figure(figsize=(max(3.5, 1.1 * len(algs) + 1.5), 3.4), layout="constrained")
    ax = figure.subplots()
    for position, alg in enumerate(algs):
        values = np.asarray(scores[alg], dtype=float)
        # A fixed spread of the dots (not random), so the plot is the same on every build.
        offsets = np.linspace(-0.15, 0.15, values.size) if values.size > 1 else np.zeros(1)
        color = palette.get(alg, "C0")
        ax.scatter(position + offsets, values, color=color, s=22, zorder=3)
        ax.hlines(values.mean(), position - 0.3, position + 0.3, color=color, linewidth=2)
    ax.set_xticks(range(len(algs)), [label(alg) for alg in algs], rotation=20, ha="right")
    ax.set_ylabel(label(metric))
    ax.set_title("final test score per seed (bar: mean)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    figure.savefig(path, dpi=100, metadata=_METADATA)
    return path


def overall_iqm(overall: pd.DataFrame, palette: Mapping[str, str], path: Path) -> Path:
    """Each algorithm's IQM of normalized scores with its 95% interval (when available)."""
    rows = overall.sort_values("alg", ascending=False)  # the first algorithm at the top
    figure = Figure(figsize=(6, max(1.8, 0.5 * len(rows) + 1.0)), layout="constrained")
    ax = figure.subplots()
    for position, row in enumerate(rows.itertuples(index=False)):
        color = palette.get(row.alg, "C0")
        if np.isfinite(row.ci_low):
            ax.hlines(position, row.ci_low, row.ci_high, color=color, linewidth=6, alpha=0.4)
        ax.plot([row.iqm], [position], "o", color=color)
    ax.set_yticks(range(len(rows)), [label(alg) for alg in rows["alg"]])
    ax.set_xlim(-0.05, 1.05)
    ax.set_xlabel("IQM of normalized headline scores")
    ax.set_title("dot: IQM; bar: 95% stratified bootstrap interval", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    figure.savefig(path, dpi=100, metadata=_METADATA)
    return path
