"""Helpers that keep problems about a submission readable."""

from __future__ import annotations

from grue_bench.errors import Problem

FORMAT_FIX = "see baselines/README.md for the submission format"


def clip(text: str, limit: int = 80) -> str:
    """``text``, cut to ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def keyed(problem: Problem, prefix: str) -> Problem:
    """The problem with ``prefix`` (a file name) before its key."""
    return Problem(problem.message, f"{prefix}: {problem.key}" if problem.key else prefix, problem.fix)


def shorten(problem: Problem, limit: int = 300) -> Problem:
    """The problem with its message cut to ``limit`` characters (hostile input stays readable)."""
    if len(problem.message) <= limit:
        return problem
    return Problem(problem.message[: limit - 1] + "…", problem.key, problem.fix)
