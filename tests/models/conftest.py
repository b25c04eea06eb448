"""Fixtures for the base-LM tests: a private cache, a small IMDB corpus and quick tiny-LM settings."""

from __future__ import annotations

import json

import pytest

from grue_bench.paths import bundled_dir


@pytest.fixture(scope="module")
def models_cache(tmp_path_factory: pytest.TempPathFactory):
    """An empty ``GRUE_CACHE`` for one base-LM test module, which sees the first build or
    conversion itself whatever ran before; set for that module's tests only."""
    path = tmp_path_factory.mktemp("grue_cache_models")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRUE_CACHE", str(path))
        yield path


@pytest.fixture(scope="session")
def imdb_texts() -> list[str]:
    """200 lines of shipped IMDB training text (prompts and references), read without task loading."""
    rows = []
    with (bundled_dir("tasks") / "imdb" / "data" / "train.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            rows.append(json.loads(line))
            if len(rows) == 100:
                break
    return [row["prompt"] for row in rows] + [ref for row in rows for ref in row["references"]][:100]


@pytest.fixture(scope="session")
def quick_configs() -> dict:
    """Per model type, a tiny-LM config that pretrains in a few seconds (the defaults take a minute)."""
    from dataclasses import replace

    from grue_bench.models.tiny import TinyLMConfig

    causal = TinyLMConfig(
        vocab_size=600,
        width=64,
        heads=4,
        d_ff=128,
        n_positions=128,
        steps=150,
        batch_size=8,
        learning_rate=2e-3,
        warmup_steps=10,
        block_size=64,
        max_source_tokens=48,
        max_target_tokens=32,
        validation_fraction=0.1,
    )
    return {"causal": causal, "seq2seq": replace(causal, learning_rate=6e-3)}
