"""RL4LMs's datapool ids and arguments, on our tasks' data, so RL4LMs configs run unchanged."""

from __future__ import annotations

import dataclasses
from typing import Literal

from grue_bench.datapools import TaskPool
from grue_bench.errors import GrueError

EOU = " <EOU> "


def _replace_prompts(pool: TaskPool, prompts: list[str]) -> TaskPool:
    return TaskPool(
        [dataclasses.replace(s, prompt_or_input_text=p) for s, p in zip(pool, prompts, strict=True)]
    )


class IMDB(TaskPool):
    @classmethod
    def prepare(
        cls, split: str, seed: int = 0, source: str = "shipped", max_samples: int | None = None
    ) -> TaskPool:
        return TaskPool.prepare(split, "imdb", source, max_samples=max_samples, seed=seed)


class CommonGen(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        concept_separator_token: str = " ",
        concept_end_token: str = ".",
        prefix: str = "generate a sentence with: ",
        source: str = "shipped",
        max_samples: int | None = None,
        seed: int = 0,
    ) -> TaskPool:
        pool = TaskPool.prepare(
            split, "commongen", source, prompt_prefix="", max_samples=max_samples, seed=seed
        )
        prompts = [
            f"{prefix}{concept_separator_token.join(s.meta_data['concepts'])}{concept_end_token}"
            for s in pool
        ]
        return _replace_prompts(pool, prompts)


class CNNDailyMail(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        prompt_prefix: str = "Summarize: ",
        source: str = "shipped",
        max_samples: int | None = None,
        seed: int = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "cnn_dailymail", source, prompt_prefix, max_samples, seed)


class ToTTo(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        representation: Literal["subtable"] = "subtable",
        source: str = "shipped",
        max_samples: int | None = None,
        seed: int = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "totto", source, max_samples=max_samples, seed=seed)


class NarrativeQA(TaskPool):
    @classmethod
    def prepare(
        cls, split: str, source: str = "shipped", max_samples: int | None = None, seed: int = 0
    ) -> TaskPool:
        return TaskPool.prepare(split, "narrative_qa", source, max_samples=max_samples, seed=seed)


class IWSLT2017EnDe(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        prompt_prefix: str = "translate English to German: ",
        source: str = "shipped",
        max_samples: int | None = None,
        seed: int = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "iwslt2017_en_de", source, prompt_prefix, max_samples, seed)


class DailyDialog(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        context_size: int = 5,
        source: str = "shipped",
        max_samples: int | None = None,
        seed: int = 0,
    ) -> TaskPool:
        if not 1 <= context_size <= 5:
            raise GrueError(
                f"context_size {context_size} is out of range",
                key="datapool.args.context_size",
                fix="use 1 to 5 (the shipped dialogues keep at most 5 previous turns)",
            )
        pool = TaskPool.prepare(split, "daily_dialog", source, max_samples=max_samples, seed=seed)
        return _replace_prompts(
            pool, [EOU.join(s.prompt_or_input_text.split(EOU)[-context_size:]) for s in pool]
        )
