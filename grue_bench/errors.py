"""Errors a user can cause: each names where (file, key path) and how to fix it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a user's input."""

    message: str
    key: str = ""
    fix: str = ""

    def render(self, source: str | None) -> str:
        where = ": ".join(part for part in (source or "", self.key) if part)
        text = f"{where}: {self.message}" if where else self.message
        return f"{text}\n  fix: {self.fix}" if self.fix else text


class GrueError(Exception):
    """An error caused by user input; the CLI prints it without a traceback and exits 2."""

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, key: str = "", fix: str = ""):
        self.source = source
        self.problems: list[Problem] = [Problem(message, key, fix)]
        super().__init__(self.render())

    @classmethod
    def many(cls, problems: Sequence[Problem], source: str | None = None) -> GrueError:
        """Collect several problems with one input into one error."""
        error = cls.__new__(cls)
        error.source = source
        error.problems = list(problems)
        Exception.__init__(error, error.render())
        return error

    def render(self) -> str:
        if len(self.problems) == 1:
            return self.problems[0].render(self.source)
        head = f"{len(self.problems)} problems in {self.source or 'input'}:"
        return "\n".join([head, *("- " + p.render(self.source) for p in self.problems)])


class MissingAssetError(GrueError):
    """An offline asset (model weights, metric data, jar) is missing; says how to provide it."""
