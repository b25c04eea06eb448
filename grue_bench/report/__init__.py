"""The leaderboard: aggregate a results store into static HTML pages, plots and CSV/JSON tables."""

from __future__ import annotations

from grue_bench.report.build import build_report

__all__ = ["build_report"]
