"""Summaries of human ratings: per-system means with 95% intervals (the leaderboard's own bootstrap),
agreement between workers (Krippendorff's alpha, ordinal) and pairwise win rates."""

from __future__ import annotations

import math

import pandas as pd

from grue_bench.crowd.agreement import krippendorff_alpha
from grue_bench.crowd.ingest import WIN_RATE
from grue_bench.report.aggregate import bootstrap_mean_ci, ratings_table

AGREEMENT_COLUMNS = ["task", "axis", "alpha", "n_units", "n_workers"]
WIN_COLUMNS = ["task", "system", "opponent", "n", "wins", "ties", "losses", "win_rate", "ci_low", "ci_high"]


def rating_means(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per task × system × Likert axis: mean, 95% bootstrap interval, counts (as on the leaderboard)."""
    return ratings_table(ratings[ratings["axis"] != WIN_RATE])


def agreement(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per task × axis: ordinal alpha over items rated by two or more workers.

    A Likert item is a (batch, sample, system); a pairwise one is a (batch, sample, pair of systems)
    whose value is the first system's score (0, 0.5, 1; systems in alphabetical order)."""
    records = []
    for (task, axis), group in ratings.groupby(["task", "axis"], sort=True):
        units = _pairwise_units(group) if axis == WIN_RATE else _likert_units(group)
        pairable = [values for values in units if len(values) >= 2]
        workers = int(group["worker_id"].nunique())
        records.append((task, axis, krippendorff_alpha(pairable), len(pairable), workers))
    return pd.DataFrame.from_records(records, columns=AGREEMENT_COLUMNS)


def _likert_units(group: pd.DataFrame) -> list[list[float]]:
    return [
        unit["rating"].tolist() for _, unit in group.groupby(["batch_id", "sample_id", "system"], sort=True)
    ]


def _pairwise_units(group: pd.DataFrame) -> list[list[float]]:
    units: dict[tuple[str, ...], list[float]] = {}
    for (batch, sample, _), answer in group.groupby(["batch_id", "sample_id", "assignment_id"], sort=True):
        first, second = sorted(answer["system"])
        score = float(answer.loc[answer["system"] == first, "rating"].iloc[0])
        units.setdefault((batch, sample, first, second), []).append(score)
    return list(units.values())


def win_rates(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per task, system and opponent: wins, ties, losses and win rate (ties count half), with a 95%
    bootstrap interval over comparisons."""
    pairwise = ratings[ratings["axis"] == WIN_RATE]
    opponent = pairwise[["assignment_id", "system"]].rename(columns={"system": "opponent"})
    paired = pairwise.merge(opponent, on="assignment_id")
    paired = paired[paired["system"] != paired["opponent"]]
    records = []
    for (task, system, other), group in paired.groupby(["task", "system", "opponent"], sort=True):
        scores = group["rating"].to_numpy(dtype=float)
        low, high = bootstrap_mean_ci(scores)
        wins, ties = int((scores == 1.0).sum()), int((scores == 0.5).sum())
        records.append(
            (
                task,
                system,
                other,
                scores.size,
                wins,
                ties,
                scores.size - wins - ties,
                scores.mean(),
                low,
                high,
            )
        )
    return pd.DataFrame.from_records(records, columns=WIN_COLUMNS)


def format_summary(ratings: pd.DataFrame) -> str:
    """The three summaries as plain text tables for the terminal."""
    if ratings.empty:
        return "no ratings stored"
    parts = []
    means = rating_means(ratings)
    if not means.empty:
        means = means.assign(interval=[_interval(r.ci_low, r.ci_high) for r in means.itertuples()])
        shown = means[["task", "system", "axis", "mean", "interval", "n_ratings", "n_workers"]]
        parts.append("Mean ratings (95% bootstrap interval)\n" + _text(shown))
    wins = win_rates(ratings)
    if not wins.empty:
        wins = wins.assign(interval=[_interval(r.ci_low, r.ci_high) for r in wins.itertuples()])
        shown = wins[["task", "system", "opponent", "n", "wins", "ties", "losses", "win_rate", "interval"]]
        parts.append("Pairwise win rates (ties count half)\n" + _text(shown))
    alphas = agreement(ratings)
    alphas["alpha"] = [("n/a" if math.isnan(a) else f"{a:.3f}") for a in alphas["alpha"]]
    parts.append("Agreement between workers (Krippendorff's alpha, ordinal)\n" + _text(alphas))
    return "\n\n".join(parts)


def _interval(low: float, high: float) -> str:
    return "-" if math.isnan(low) else f"[{low:.2f}, {high:.2f}]"


def _text(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda value: f"{value:.3f}")
