"""Synthetic rewards (RL4LMs's sanity checks) and CommonGen's prompt-copy penalty."""

from __future__ import annotations

from pydantic import NonNegativeInt

from grue_bench.errors import GrueError
from grue_bench.metrics.synthetic import DATE_PATTERN, increasing_numbers_fraction
from grue_bench.rewards.base import RewardFunction


class IncreasingNumbers(RewardFunction):
    """RL4LMs ``increasing_numbers``: reward texts that count upwards."""

    def __init__(self, min_tokens: NonNegativeInt = 20) -> None:
        self.min_tokens = min_tokens

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        return [increasing_numbers_fraction(text, self.min_tokens) for text in generations]


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
    A prompt without the prefix (the small profile's instruction has another prefix and suffix)
    takes its concept text from the sample's meta data when that lists the ``concepts`` (CommonGen's
    does): joined by spaces, as RL4LMs's datapool writes them into its prompts by default.
    RL4LMs's two ids differ only in calling convention (one episode per step, or a batch of
    episodes scoring those that are done); ours always scores a batch of finished episodes.
    ``prefix`` is a GRUE extension for prompts built with another prefix; RL4LMs fixes it.
    """

    def __init__(self, prefix: str = "generate a sentence with: ") -> None:
        self.prefix = prefix

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        triples = zip(prompts, generations, meta_infos, strict=True)
        return [self._penalty(prompt, text, meta or {}) for prompt, text, meta in triples]

    def _penalty(self, prompt: str, text: str, meta: dict) -> float:
        if self.prefix not in prompt and meta.get("concepts"):
            concepts = " ".join(meta["concepts"]).lower()
        else:
            concepts = self._concepts(prompt)
        lowered = text.lower()
        copies = concepts in lowered or self.prefix.lower() in lowered
        return -1.0 if copies or "generate" in lowered or "sentence" in lowered else 0.0

    def _concepts(self, prompt: str) -> str:
        """RL4LMs's concept text: what follows the prefix in the prompt, less its last character."""
        parts = prompt.split(self.prefix)
        if len(parts) < 2:
            raise GrueError(
                f"common_gen_repeat_penalty: prompt {prompt[:80]!r} does not contain the prefix "
                f"{self.prefix!r}, so its concepts cannot be found",
                key="reward_fn.args.prefix",
                fix="set prefix to the one the datapool puts before the concepts",
            )
        return parts[1][:-1].lower()
