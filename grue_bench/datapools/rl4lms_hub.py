"""RL4LMs's datapools for data GRUE Bench ships no subset of: WMT translation (``wmt16``,
``wmt14_processed_en_de``, ``wmt16newsonly``) and Critical Role dialogue (``crd3``). They read the
Hugging Face hub (CRD3: its GitHub archive) as RL4LMs does; offline, they fail naming the data
and how to provide it."""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path
from typing import Any

from pydantic import NonNegativeInt, PositiveInt

from grue_bench.data import Sample, TextGenPool
from grue_bench.datapools import check_split, hub_split, sample_subset
from grue_bench.errors import MissingAssetError
from grue_bench.paths import cache_dir

log = logging.getLogger(__name__)


def _hub_split(path: str, name: str | None, split: str) -> Any:
    return hub_split(
        path,
        name,
        split,
        key="datapool.id",
        fix="run where the Hugging Face hub is reachable (the dataset is cached after the first "
        "load), or use a datapool with shipped data (grue ls datapools)",
    )


def translation_samples(
    rows: Any, split: str, source: str, target: str, prompt_prefix: str, prompt_suffix: str
) -> list[Sample]:
    """RL4LMs's translation samples: prefix + source sentence + suffix -> the target sentence."""
    return [
        Sample(
            id=f"{split}_{index}",
            prompt_or_input_text=f"{prompt_prefix}{row['translation'][source]}{prompt_suffix}",
            references=[row["translation"][target]],
        )
        for index, row in enumerate(rows)
    ]


class WMT(TextGenPool):
    """RL4LMs ``wmt16``: any WMT dataset (``wmt_id``, e.g. wmt16) and language pair; the pair is
    looked up as source-target, then target-source, as RL4LMs does."""

    @classmethod
    def prepare(
        cls,
        split: str,
        wmt_id: str,
        source_language: str,
        target_language: str,
        prompt_suffix: str = "",
        prompt_prefix: str = "",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> WMT:
        check_split(split)
        try:
            rows = _hub_split(wmt_id, f"{source_language}-{target_language}", split)
        except MissingAssetError:
            rows = _hub_split(wmt_id, f"{target_language}-{source_language}", split)
        samples = translation_samples(
            rows, split, source_language, target_language, prompt_prefix, prompt_suffix
        )
        return cls(sample_subset(samples, max_samples, seed))


class _EnglishToGerman(TextGenPool):
    """RL4LMs's English-to-German pools: only the hub dataset read for each split differs."""

    @classmethod
    def dataset(cls, split: str) -> tuple[str, str | None]:
        """(hub path, config name) of ``split``."""
        raise NotImplementedError

    @classmethod
    def prepare(
        cls,
        split: str,
        prompt_suffix: str = "",
        prompt_prefix: str = "",
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> _EnglishToGerman:
        check_split(split)
        rows = _hub_split(*cls.dataset(split), split)
        samples = translation_samples(rows, split, "en", "de", prompt_prefix, prompt_suffix)
        return cls(sample_subset(samples, max_samples, seed))


class WMT14PreprocessedEnDe(_EnglishToGerman):
    """RL4LMs ``wmt14_processed_en_de``: stas/wmt14-en-de-pre-processed, English to German."""

    @classmethod
    def dataset(cls, split: str) -> tuple[str, str | None]:
        return "stas/wmt14-en-de-pre-processed", None


class WMT16NewsOnlyDatasetEnDe(_EnglishToGerman):
    """RL4LMs ``wmt16newsonly``: trains on News Commentary (de-en), evaluates on WMT16 (de-en);
    English to German."""

    @classmethod
    def dataset(cls, split: str) -> tuple[str, str | None]:
        return ("news_commentary" if split == "train" else "wmt16"), "de-en"


CRD3_URL = "https://github.com/RevanthRameshkumar/CRD3/archive/refs/heads/master.zip"
"""The CRD3 corpus (Critical Role transcripts), as RL4LMs downloads it."""
CRD3_SPLIT_FILES = {"train": "train_files", "validation": "val_files", "test": "test_files"}


def crd3_folder() -> Path:
    """The extracted CRD3 archive in the GRUE Bench cache, downloaded first if need be."""

    base = cache_dir() / "crd3"
    folder = base / "CRD3-master"
    if folder.is_dir():
        return folder
    import urllib.request

    archive = base / "master.zip"
    try:
        base.mkdir(parents=True, exist_ok=True)
        urllib.request.urlretrieve(CRD3_URL, archive)
    except OSError as exc:
        raise MissingAssetError(
            f"the CRD3 corpus is not in {folder} and could not be downloaded from {CRD3_URL}: {exc}",
            key="datapool.id",
            fix=f"run once with network, or download {CRD3_URL} and extract it into {base}",
        ) from exc
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(base)
    return folder


def crd3_episode_samples(episode: dict[str, Any], prefix: str, max_context_size: int) -> list[Sample]:
    """RL4LMs's samples of one episode: from the third turn on, the last ``max_context_size``
    turns ("NAME: utterances", one per line) and the next speaker's "NAME: " -> their utterances."""
    samples, contexts = [], []
    for turn_index, turn in enumerate(episode["TURNS"]):
        name, utterances = turn["NAMES"][0], " ".join(turn["UTTERANCES"])
        if len(contexts) > 1:
            prompt = "\n".join(contexts[-max_context_size:]) + f"\n{name}: "
            samples.append(
                Sample(id=f"{prefix}_turn_{turn_index}", prompt_or_input_text=prompt, references=[utterances])
            )
        contexts.append(f"{name}: {utterances}")
    return samples


class CRD3DialogueGeneration(TextGenPool):
    """RL4LMs ``crd3``: the next utterance of a Critical Role episode, given the ones before."""

    @classmethod
    def prepare(
        cls,
        split: str,
        max_context_size: PositiveInt,
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
    ) -> CRD3DialogueGeneration:
        check_split(split)
        folder = crd3_folder()
        names = (folder / "data" / "aligned data" / CRD3_SPLIT_FILES[split]).read_text().splitlines()
        samples = []
        for index, name in enumerate(names):
            episode = json.loads((folder / "data" / "cleaned data" / f"{name}.json").read_text())
            samples.extend(crd3_episode_samples(episode, f"{split}_ep_{index}", max_context_size))
        return cls(sample_subset(samples, max_samples, seed))
