"""Score a predictions file (JSON Lines with ``id`` and ``text``) with a task's metric suite."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="task id (see `grue ls tasks`)")
    parser.add_argument("--predictions", required=True, type=Path, help="JSONL file: one {id, text} per line")
    parser.add_argument("--split", default="test", choices=["train", "validation", "test"])
    parser.add_argument(
        "--source",
        default="shipped",
        help="where the split comes from: shipped (default), hub, or a local JSONL file/folder",
    )
    parser.add_argument(
        "--metrics", help="comma-separated metric ids to run instead of the task's whole suite"
    )
    parser.add_argument(
        "--model",
        help="a causal LM for metrics that score under a model (perplexity): a folder saved with "
        "save_pretrained, or a Hugging Face hub id",
    )
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench import plugins
    from grue_bench.datapools import TaskPool
    from grue_bench.schema import Component
    from grue_bench.scoring import load_predictions, score

    task = plugins.TASKS.get(args.task)
    samples = list(TaskPool.prepare(args.split, task=task.id, source=args.source))
    texts = load_predictions(args.predictions, samples)
    metrics = task.metrics
    if args.metrics:
        wanted = [m.strip() for m in args.metrics.split(",") if m.strip()]
        for id in wanted:
            if id not in plugins.METRICS:
                raise plugins.METRICS.unknown(id, source="--metrics")
        by_id = {m.id: m for m in task.metrics}
        metrics = [by_id.get(id, Component(id=id)) for id in wanted]
    model = _scoring_model(args.model) if args.model else None
    scores = score(metrics, samples, texts, model=model, split=args.split)
    table = scores.corpus()
    if args.json:
        header = {"task": task.id, "task_version": task.version, "split": args.split, "n": len(samples)}
        print(json.dumps({**header, "scores": table, "skipped": scores.skipped}, indent=2))
        return 0
    print(f"task {task.id} v{task.version}, split {args.split}, {len(samples)} samples")
    width = max([len(k) for k in table] + [len(k) for k in scores.skipped])
    for key, value in table.items():
        print(f"  {key:<{width}}  {value:.4f}")
    for id, reason in scores.skipped.items():
        print(f"  {id:<{width}}  skipped: {reason}")
    return 0


def _scoring_model(model_name: str):  # -> transformers.PreTrainedModel
    """The causal LM ``model_name`` (folder or hub id), with its tokenizer attached for the metrics."""
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.models import load_base_lm

    lm = load_base_lm("causal", model_name=model_name)
    lm.model.tokenizer = lm.tokenizer
    return lm.model
