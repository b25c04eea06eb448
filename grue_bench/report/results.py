"""The tables a report is made of: one set per profile (runs of different profiles never share a
ranking), and what all profiles share."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from grue_bench.report.evidence import Anchors


@dataclass
class ProfileResults:
    """The tables of one profile's leaderboard (runs of different profiles never share one)."""

    profile: str
    final: pd.DataFrame
    summary: pd.DataFrame
    """``evidence.SUMMARY_COLUMNS``: algorithms, then the tasks' floors and ceiling."""
    flags: dict[tuple[str, str], str]
    """(task, algorithm) -> why the row is flagged as collapsed (such rows are never ranked)."""
    marks: dict[tuple[str, str], str]
    """(task, algorithm) -> 'at floor' / 'below floor' against the task's best floor."""
    anchors: dict[str, Anchors]
    verdicts: pd.DataFrame
    ranks: pd.DataFrame
    improvement: pd.DataFrame
    average_improvement: pd.DataFrame
    normalized: pd.DataFrame
    overall: pd.DataFrame


@dataclass
class Results:
    """Every aggregate table of a report."""

    final: pd.DataFrame
    profiles: dict[str, ProfileResults]
    ratings: pd.DataFrame
