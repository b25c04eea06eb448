"""Time a task's evaluation (run by hand).

    python benchmarks/bench_eval.py [--task imdb] [--split test]
    python benchmarks/bench_eval.py --generate --profile small [--precision bf16] [--threads 2]

Without ``--generate``: scores the split's references themselves as predictions, with the tiny
base LM passed for perplexity, so every metric of the suite runs; prints the seconds taken, model
loading and asset warm-up (cached after the first run) timed apart. With ``--generate``: the
evaluation a run of ``--profile`` makes of its base model (``runner.evaluator.evaluate``: the
profile's generation settings and batch size, then the task's suite), generation and scoring
timed apart, in ``--precision``.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="imdb")
    parser.add_argument("--split", default="test")
    parser.add_argument("--generate", action="store_true", help="generate the predictions, as a run does")
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from grue_bench import plugins
    from grue_bench.datapools import TaskPool, task_corpus
    from grue_bench.models import load_base_lm
    from grue_bench.scoring import score

    task = plugins.TASKS.get(args.task)
    started = time.perf_counter()
    if args.generate:  # the profile's model, prompts and generation settings, as a run has them
        from grue_bench.resolve import build_config, task_config
        from grue_bench.runner.assemble import load_base, load_pool

        config = build_config(task_config(task, "ppo", args.profile), "the benchmark's evaluation")
        samples = list(load_pool(config, args.split))
        base = load_base(config)
    else:
        samples = list(TaskPool.prepare(args.split, task=task.id))
        base = load_base_lm(
            task.model_type, profile=args.profile, corpus=lambda: task_corpus(task.id), corpus_id=task.id
        )
    base.model.tokenizer = base.tokenizer
    load_s = time.perf_counter() - started
    warm = time.perf_counter()
    # the first call loads (or trains and caches) the metric assets
    score(
        task.metrics, samples[:2], [s.references[0] for s in samples[:2]], model=base.model, split=args.split
    )
    warm_s = time.perf_counter() - warm
    figures = {"task": task.id, "split": args.split, "rows": len(samples), "profile": args.profile}
    if args.generate:
        figures.update(_generated(config, base, samples, args))
    else:
        started = time.perf_counter()
        scores = score(
            task.metrics, samples, [s.references[0] for s in samples], model=base.model, split=args.split
        )
        figures.update(score_s=round(time.perf_counter() - started, 2), skipped=scores.skipped)
    print(json.dumps({**figures, "asset_warmup_s": round(warm_s, 2), "model_load_s": round(load_s, 2)}))


def _generated(config, base, samples, args) -> dict:
    """Generation and scoring seconds of the evaluation a run of ``args.profile`` makes."""
    import torch

    from grue_bench.rl.precision import Precision
    from grue_bench.runner.evaluator import generate_texts, score_texts

    lm, tokenizer, split = base.model, base.tokenizer, args.split
    started = time.perf_counter()
    precision, device = Precision(args.precision, "cpu"), torch.device("cpu")
    texts = generate_texts(lm, tokenizer, base.model_type, config, samples, split, device, precision)
    generated = time.perf_counter()
    scores, _ = score_texts(lm, tokenizer, base.model_type, config, samples, split, texts, precision)
    scored = time.perf_counter()
    return {
        "precision": args.precision,
        "eval_batch_size": config.train_evaluation.eval_batch_size,
        "generate_s": round(generated - started, 2),
        "score_s": round(scored - generated, 2),
        "skipped": scores.skipped,
    }


if __name__ == "__main__":
    main()
