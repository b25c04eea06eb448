"""Synthetic rewards (RL4LMs's sanity checks) and CommonGen's prompt-copy penalty."""

from __future__ import annotations

import re
from itertools import pairwise

from grue_bench.errors import GrueError
from grue_bench.rewards.base import RewardFunction


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def increasing_numbers_fraction(text: str, min_tokens: int) -> float:
    """RL4LMs's score: how many of the text's numbers, from the first, strictly increase,
    over max(number of tokens, min_tokens / 2); 0 for a text without numbers.

    Words between numbers are skipped when counting the run but lengthen the text, so the
    score is highest for a text of nothing but increasing numbers, at least min_tokens / 2 long.
    """
    tokens = text.split()
    numbers = [value for value in map(_number, tokens) if value is not None]
    if not numbers:
        return 0.0
    run = 1
    for previous, value in pairwise(numbers):
        if not value > previous:
            break
        run += 1
    return run / max(len(tokens), min_tokens / 2)


class IncreasingNumbers(RewardFunction):
    """RL4LMs ``increasing_numbers``: reward texts that count upwards."""

    def __init__(self, min_tokens: int = 20) -> None:
        self.min_tokens = min_tokens

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        return [increasing_numbers_fraction(text, self.min_tokens) for text in generations]


DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")
"""RL4LMs's date: an ISO date such as 2021-05-12, anywhere in the text."""


class SentencesWithDates(RewardFunction):
    """RL4LMs ``sentences_with_dates``: 1 for a text that contains an ISO date (YYYY-MM-DD), else 0."""

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        return [1.0 if DATE_PATTERN.search(text) else 0.0 for text in generations]


class CommonGenRepeatPenalty(RewardFunction):
    """RL4LMs ``common_gen_repeat_penalty`` and ``common_gen_repeat_penalty_batched``: -1 when the
    output copies the prompt, else 0 (the degenerate solution lexical rewards on CommonGen invite).

    As RL4LMs: the concept text is what follows ``prefix`` in the prompt, less its last character
    (the concept end token); the output copies the prompt when, lower-cased, it contains that
    concept text, the prefix, or the substrings "generate" or "sentence" (so "sentences" counts).
    RL4LMs's two ids differ only in calling convention (one episode per step, or a batch of
    episodes scoring those that are done); ours always scores a batch of finished episodes.
    ``prefix`` is a GRUE extension for prompts built with another prefix; RL4LMs fixes it.
    """

    def __init__(self, prefix: str = "generate a sentence with: ") -> None:
        self.prefix = prefix

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        return [self._penalty(prompt, text) for prompt, text in zip(prompts, generations, strict=True)]

    def _penalty(self, prompt: str, text: str) -> float:
        parts = prompt.split(self.prefix)
        if len(parts) < 2:
            raise GrueError(
                f"common_gen_repeat_penalty: prompt {prompt[:80]!r} does not contain the prefix "
                f"{self.prefix!r}, so its concepts cannot be found",
                key="reward_fn.args.prefix",
                fix="set prefix to the one the datapool puts before the concepts",
            )
        concepts = parts[1][:-1].lower()
        lowered = text.lower()
        copies = concepts in lowered or self.prefix.lower() in lowered
        return -1.0 if copies or "generate" in lowered or "sentence" in lowered else 0.0
