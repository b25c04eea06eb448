"""Evaluating a policy on a split: batched generation, then the task's metric suite; and the
run's ``Evaluator``, which also writes each evaluation's scores and predictions to disk."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from grue_bench import plugins
from grue_bench.config import RunConfig
from grue_bench.data import Sample
from grue_bench.postprocessing import post_process
from grue_bench.rl.precision import FP32, Precision
from grue_bench.rl.rollout import generate
from grue_bench.runner.generation import evaluation_generation_kwargs, generation_settings
from grue_bench.runner.host_memory import hand_back_when_short
from grue_bench.scoring import Scores, score


def evaluate(
    lm: Any,
    tokenizer: Any,
    model_type: str,
    config: RunConfig,
    samples: Sequence[Sample],
    split: str,
    device,
    precision: Precision = FP32,
) -> tuple[Scores, list[dict[str, Any]]]:
    """Generate for every sample (``generate_texts``) and score the texts (``score_texts``)."""
    texts = generate_texts(lm, tokenizer, model_type, config, samples, split, device, precision)
    return score_texts(lm, tokenizer, model_type, config, samples, split, texts, precision)


def generate_texts(
    lm: Any,
    tokenizer: Any,
    model_type: str,
    config: RunConfig,
    samples: Sequence[Sample],
    split: str,
    device,
    precision: Precision = FP32,
) -> list[str]:
    """Generate for every sample with the evaluation's generation kwargs, in the run's
    ``precision``, ``eval_batch_size`` prompts at a time, shortest prompts first (a batch is
    padded to its longest prompt: prompts of like length batched together waste fewer columns);
    the texts in the samples' order, post-processed if the kwargs name a post-processor. Before each
    batch the process hands its heap's free pages back if memory is short (``host_memory``)."""
    settings = generation_settings(config, evaluation=True, tokenizer=tokenizer, model_type=model_type)
    size = config.train_evaluation.eval_batch_size
    prompts = [s.prompt_or_input_text for s in samples]
    order = by_prompt_length(tokenizer, prompts, settings.max_prompt_length)
    texts: list[str] = [""] * len(prompts)
    for start in tqdm(range(0, len(order), size), desc=f"generate {split}", unit="batch", leave=False):
        batch = order[start : start + size]
        hand_back_when_short()
        with precision.autocast():
            generated = generate(lm, tokenizer, model_type, [prompts[i] for i in batch], settings, device)
        for index, text in zip(batch, generated.texts, strict=True):
            texts[index] = text
    return post_process(evaluation_generation_kwargs(config).post_processing_fn, texts)


def by_prompt_length(tokenizer, prompts: Sequence[str], max_length: int) -> list[int]:
    """The prompts' indices ordered by their token length cut to ``max_length`` (stable: prompts
    cut to the same width keep their order)."""
    if not prompts:  # a tokenizer refuses an empty batch
        return []
    ids = tokenizer(list(prompts), truncation=True, max_length=max_length)["input_ids"]
    lengths = [len(row) for row in ids]
    return sorted(range(len(prompts)), key=lengths.__getitem__)


def score_texts(
    lm: Any,
    tokenizer: Any,
    model_type: str,
    config: RunConfig,
    samples: Sequence[Sample],
    split: str,
    texts: list[str],
    precision: Precision = FP32,
) -> tuple[Scores, list[dict[str, Any]]]:
    """Score ``texts`` with the config's metrics (its task's): those that run ``lm`` (perplexity
    under the policy) in the run's ``precision``, the others in float32; the scores and one row
    per sample."""
    metrics = evaluation_metrics(config)
    if model_type == "causal":
        lm.tokenizer = tokenizer  # model-bound metrics (perplexity) read it from the model
    model = lm if model_type == "causal" else None
    scores = score(metrics, samples, texts, model=model, split=split, model_precision=precision.autocast)
    rows = [
        {
            "sample_id": s.id,
            "prompt": s.prompt_or_input_text,
            "text": t,
            "references": s.references,
            "scores": scores.of_sample(i),
        }
        for i, (s, t) in enumerate(zip(samples, texts, strict=True))
    ]
    return scores, rows


def evaluation_metrics(config: RunConfig) -> list:
    """The metrics a run is evaluated with: ``train_evaluation.metrics``, else its task's."""
    return config.train_evaluation.metrics or plugins.TASKS.get(config.task).metrics


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """Add ``row`` as one JSON line to ``path``."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


class Evaluator:
    """Evaluates one run's model on its pools, writing ``<split>_metrics.jsonl`` and
    ``predictions/<split>_<iteration>.json`` under ``out``, as RL4LMs does."""

    def __init__(
        self,
        config: RunConfig,
        tokenizer,
        model_type: str,
        pools: dict[str, list[Sample]],
        out: Path,
        device,
        precision: Precision = FP32,
    ) -> None:
        self.config = config
        self.precision = precision
        self.tokenizer = tokenizer
        self.model_type = model_type
        self.pools = pools
        self.out = out
        self.device = device
        self.skipped: dict[str, str] = {}
        """Metrics left out of any evaluation, with the reason."""
        (out / "predictions").mkdir(parents=True, exist_ok=True)

    def __call__(self, lm, split: str, iteration: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """Score ``lm`` on ``split``; returns the corpus-level table and the generated rows."""
        samples = self.pools[split]
        scores, rows = evaluate(
            lm, self.tokenizer, self.model_type, self.config, samples, split, self.device, self.precision
        )
        table = scores.corpus()
        self.record(split, iteration, table, rows, scores.skipped)
        return table, rows

    def record(
        self,
        split: str,
        iteration: int,
        table: dict[str, float],
        rows: list[dict[str, Any]],
        skipped: dict[str, str],
    ) -> None:
        """Write an evaluation's scores and predictions to disk, and keep the metrics it skipped."""
        append_jsonl(self.out / f"{split}_metrics.jsonl", {"iteration": iteration, **table})
        (self.out / "predictions" / f"{split}_{iteration}.json").write_text(json.dumps(rows, indent=1))
        self.skipped.update(skipped)
