"""Train a classifier once and keep it under ``cache_dir()``, keyed by its training data and settings."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from grue_bench.classifiers.bow import FIT_VERSION, FORMAT_VERSION, BowClassifier, BowConfig
from grue_bench.classifiers.datasets import LabelledTexts
from grue_bench.paths import cache_dir

logger = logging.getLogger(__name__)


def cache_key(data: LabelledTexts, config: BowConfig) -> str:
    """A hash of everything that changes the trained weights."""
    payload = {
        "format_version": FORMAT_VERSION,
        "fit_version": FIT_VERSION,
        "config": asdict(config),
        "texts": data.texts,
        "labels": data.labels,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def cached_path(name: str, data: LabelledTexts, config: BowConfig) -> Path:
    """Where the classifier ``name`` trained on ``data`` with ``config`` lives."""
    return cache_dir() / "classifiers" / f"{name}-{cache_key(data, config)}"


def load_or_train(name: str, data: LabelledTexts, config: BowConfig) -> BowClassifier:
    """The cached classifier if there is one, else train it now and cache it."""
    path = cached_path(name, data, config)
    if (path / "classifier.json").is_file():
        logger.info("loading cached classifier %s", path)
        return BowClassifier.load(path)
    logger.info("training offline classifier %s on %d shipped examples", name, len(data.texts))
    classifier = BowClassifier.train(data.texts, data.labels, config)
    # Write beside the target and rename, so a crash or a concurrent run never leaves half a model.
    staging = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    classifier.save(staging)
    try:
        staging.rename(path)
    except OSError:  # another process cached it first; its copy is identical
        shutil.rmtree(staging, ignore_errors=True)
    logger.info("cached classifier at %s", path)
    return classifier
