"""Time scoring the 200-row IMDB test split with its full metric suite (run by hand).

    python benchmarks/bench_eval.py [--task imdb] [--split test]

Scores the references themselves as predictions, with the tiny IMDB base LM passed for
perplexity, so every metric of the suite runs. Prints one JSON line with the seconds taken;
model loading and classifier training (cached after the first run) are timed separately.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="imdb")
    parser.add_argument("--split", default="test")
    args = parser.parse_args()

    from grue_bench import plugins
    from grue_bench.datapools import TaskPool, task_corpus
    from grue_bench.models import load_base_lm
    from grue_bench.scoring import score

    task = plugins.TASKS.get(args.task)
    samples = list(TaskPool.prepare(args.split, task=task.id))
    started = time.perf_counter()
    base = load_base_lm(
        task.model_type, profile="tiny", corpus=lambda: task_corpus(task.id), corpus_id=task.id
    )
    base.model.tokenizer = base.tokenizer
    load_s = time.perf_counter() - started
    predictions = [s.references[0] for s in samples]
    warm = time.perf_counter()
    # the first call loads (or trains and caches) the metric assets
    score(task.metrics, samples[:2], predictions[:2], model=base.model, split=args.split)
    warm_s = time.perf_counter() - warm
    started = time.perf_counter()
    scores = score(task.metrics, samples, predictions, model=base.model, split=args.split)
    elapsed = time.perf_counter() - started
    print(
        json.dumps(
            {
                "task": task.id,
                "split": args.split,
                "rows": len(samples),
                "metrics": [m.id for m in task.metrics],
                "skipped": scores.skipped,
                "score_s": round(elapsed, 2),
                "asset_warmup_s": round(warm_s, 2),
                "model_load_s": round(load_s, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
