"""The reward interface: RL4LMs's per-step call plus the batched form our rollouts use."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Observation:
    """What RL4LMs passes to a reward: the prompt, the text so far and the references."""

    prompt_or_input_text: str
    context_text: str
    target_or_reference_texts: list[str] = field(default_factory=list)
    meta_info: dict[str, Any] = field(default_factory=dict)


class RewardFunction(ABC):
    """A sentence-level reward; constructor kwargs are the YAML ``args``."""

    @abstractmethod
    def batch(
        self,
        prompts: list[str],
        generations: list[str],
        references: list[list[str]],
        meta_infos: list[dict[str, Any]],
    ) -> list[float]:
        """One reward per generation, for a whole batch at once."""

    def __call__(
        self,
        prev_observation: Observation,
        action: int,
        current_observation: Observation,
        done: bool,
        meta_info: dict[str, Any] | None = None,
    ) -> float:
        """RL4LMs's per-step form: the sentence reward at the end of the episode, else 0."""
        if not done:
            return 0.0
        obs = current_observation
        return self.batch(
            [obs.prompt_or_input_text],
            [obs.context_text],
            [obs.target_or_reference_texts],
            [meta_info or obs.meta_info],
        )[0]
