"""Synthetic rewards (RL4LMs's sanity checks) and CommonGen's prompt-copy penalty."""

from __future__ import annotations

import re

from grue_bench.rewards.base import RewardFunction


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def increasing_prefix_fraction(text: str, min_tokens: int) -> float:
    """Length of the strictly increasing run of numbers that starts the text, over max(len, min/2).

    Only a run from the first token counts, so the reward is highest for a text that is
    nothing but increasing numbers; padding with other words lowers it.
    """
    tokens = text.split()
    run, previous = 0, None
    for token in tokens:
        value = _number(token)
        if value is None or (previous is not None and value <= previous):
            break
        run, previous = run + 1, value
    return run / max(len(tokens), min_tokens / 2, 1)


class IncreasingNumbers(RewardFunction):
    """RL4LMs ``increasing_numbers``: reward texts that count upwards."""

    def __init__(self, min_tokens: int = 20) -> None:
        self.min_tokens = min_tokens

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        return [increasing_prefix_fraction(text, self.min_tokens) for text in generations]


_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
DATE_PATTERN = re.compile(
    rf"""\b(
        \d{{4}}-\d{{1,2}}-\d{{1,2}}                                    # 2021-05-12
      | \d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}                              # 12/05/2021, 12.05.21
      | \d{{1,2}}(st|nd|rd|th)?\s+({_MONTHS})\.?,?\s+\d{{4}}              # 5 May 2021
      | ({_MONTHS})\.?\s+\d{{1,2}}(st|nd|rd|th)?,?\s+\d{{4}}              # May 5, 2021
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)


class SentencesWithDates(RewardFunction):
    """RL4LMs ``sentences_with_dates``: 1 for a text that contains a calendar date, else 0."""

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        return [1.0 if DATE_PATTERN.search(text) else 0.0 for text in generations]


class CommonGenRepeatPenalty(RewardFunction):
    """RL4LMs ``common_gen_repeat_penalty``: -1 when the output copies the prompt, else 0.

    Copying means repeating the concept list verbatim or the instruction words, the
    degenerate solution lexical rewards on CommonGen otherwise invite.
    """

    def __init__(self, prefix: str = "generate a sentence with: ") -> None:
        self.prefix = prefix.lower()

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        penalties = []
        for prompt, text in zip(prompts, generations, strict=True):
            concepts = prompt.lower().removeprefix(self.prefix).rstrip(". ")
            lowered = text.lower()
            copied = (
                (concepts and concepts in lowered)
                or self.prefix.strip() in lowered
                or any(word in lowered.split() for word in ("generate", "sentence"))
            )
            penalties.append(-1.0 if copied else 0.0)
        return penalties
