"""RL4LMs's datapool ids and arguments, on our tasks' data, so RL4LMs configs run unchanged."""

from __future__ import annotations

import dataclasses
import random
from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, PositiveInt

from grue_bench.classifiers.datasets import join_words
from grue_bench.data import Sample
from grue_bench.datapools import DataSource, TaskPool, sample_subset

EOU = " <EOU> "


def _replace_prompts(pool: TaskPool, prompts: list[str]) -> TaskPool:
    return TaskPool(
        [dataclasses.replace(s, prompt_or_input_text=p) for s, p in zip(pool, prompts, strict=True)]
    )


IMDB_TRAIN_RATIO = 0.8
"""RL4LMs cuts IMDB's (shuffled) train split into 80% train and 20% validation."""
IMDB_MAX_TEST = 5000
"""RL4LMs keeps 5000 of IMDB's (shuffled) test reviews."""


def _imdb_split(split: str, seed: int, source: str) -> list[Sample]:
    """RL4LMs's IMDB splits, drawn from the task's train and test reviews (``source``: shipped
    subset, hub or a file): train and validation are an 80/20 cut of the train reviews shuffled
    with ``seed``; test is the test reviews shuffled, at most 5000."""
    from_split = "test" if split == "test" else "train"
    samples = list(TaskPool.prepare(from_split, "imdb", source))
    random.Random(seed).shuffle(samples)
    if split == "test":
        return samples[:IMDB_MAX_TEST]
    cut = int(len(samples) * IMDB_TRAIN_RATIO)
    return samples[:cut] if split == "train" else samples[cut:]


def _review(sample: Sample) -> str:
    """The whole review: the task's prompt (its first half of words) and reference (the rest)."""
    return join_words(sample.prompt_or_input_text, sample.references[0])


class IMDB(TaskPool):
    """RL4LMs ``imdb``: half of a review's words as prompt, the whole review as reference (what
    RL4LMs's perplexity scores); ``seed`` picks the train/validation cut."""

    @classmethod
    def prepare(
        cls,
        split: str,
        seed: NonNegativeInt = 0,
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
    ) -> TaskPool:
        samples = [dataclasses.replace(s, references=[_review(s)]) for s in _imdb_split(split, seed, source)]
        return TaskPool(sample_subset(samples, max_samples, seed))


class IMDBForSeq2Seq(TaskPool):
    """RL4LMs ``imdb_seq2seq`` (its supervised IMDB data): half of a review's words as prompt, the
    other half as reference, the whole review as ``meta_data["reference"]``; the train split keeps
    positive reviews only, the first ``positive_ratio`` of them. RL4LMs shuffles without a seed
    (a new split every run); here ``seed`` (default 0) fixes it."""

    @classmethod
    def prepare(
        cls,
        split: str,
        positive_ratio: Annotated[float, Field(gt=0, le=1)] = 1.0,
        seed: NonNegativeInt = 0,
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
    ) -> TaskPool:
        samples = [
            dataclasses.replace(s, meta_data={**s.meta_data, "reference": _review(s)})
            for s in _imdb_split(split, seed, source)
            if split != "train" or s.meta_data.get("label") == 1
        ]
        if split == "train":
            samples = samples[: int(len(samples) * positive_ratio)]
        return TaskPool(sample_subset(samples, max_samples, seed))


class CommonGen(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        concept_separator_token: str = " ",
        concept_end_token: str = ".",
        prefix: str = "generate a sentence with: ",
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
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
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "cnn_dailymail", source, prompt_prefix, max_samples, seed)


class ToTTo(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        representation: Literal["subtable"] = "subtable",
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "totto", source, max_samples=max_samples, seed=seed)


class NarrativeQA(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "narrative_qa", source, max_samples=max_samples, seed=seed)


class IWSLT2017EnDe(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        prompt_prefix: str = "translate English to German: ",
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> TaskPool:
        return TaskPool.prepare(split, "iwslt2017_en_de", source, prompt_prefix, max_samples, seed)


class DailyDialog(TaskPool):
    @classmethod
    def prepare(
        cls,
        split: str,
        context_size: Annotated[int, Field(ge=1, le=5)] = 5,
        source: DataSource = "shipped",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> TaskPool:
        """``context_size``: the previous turns kept (the shipped dialogues keep at most 5)."""
        pool = TaskPool.prepare(split, "daily_dialog", source, max_samples=max_samples, seed=seed)
        return _replace_prompts(
            pool, [EOU.join(s.prompt_or_input_text.split(EOU)[-context_size:]) for s in pool]
        )
