"""Evaluating a policy on a split: batched generation, then the task's metric suite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from grue_bench.config import RunConfig
from grue_bench.data import Sample
from grue_bench.evaluation import Scores, score


def evaluate(
    lm: Any, tokenizer: Any, model_type: str, config: RunConfig, samples: Sequence[Sample], split: str, device
) -> tuple[Scores, list[dict[str, Any]]]:
    """Generate for every sample with the evaluation's generation kwargs, post-process the texts
    if they name a post-processor, and score them."""
    from grue_bench import plugins
    from grue_bench.postprocessing import post_process
    from grue_bench.rl.rollout import generate
    from grue_bench.rl.trainer import evaluation_generation_kwargs, generation_settings

    settings = generation_settings(config, evaluation=True, tokenizer=tokenizer, model_type=model_type)
    size = config.train_evaluation.eval_batch_size
    texts: list[str] = []
    for start in tqdm(range(0, len(samples), size), desc=f"generate {split}", unit="batch", leave=False):
        prompts = [s.prompt_or_input_text for s in samples[start : start + size]]
        texts.extend(generate(lm, tokenizer, model_type, prompts, settings, device).texts)
    texts = post_process(evaluation_generation_kwargs(config).post_processing_fn, texts)
    metrics = config.train_evaluation.metrics or plugins.TASKS.get(config.task).metrics
    if model_type == "causal":
        lm.tokenizer = tokenizer  # model-bound metrics (perplexity) read it from the model
    scores = score(metrics, samples, texts, model=lm if model_type == "causal" else None, split=split)
    rows = [
        {"sample_id": s.id, "prompt": s.prompt_or_input_text, "text": t, "references": s.references}
        for s, t in zip(samples, texts, strict=True)
    ]
    return scores, rows
