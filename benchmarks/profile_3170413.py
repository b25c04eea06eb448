"""``bench_profile.py``'s run on main at 3170413, the commit issue 39's goals compare against (run by
hand, not a test; 3170413 has no ``bench_profile.py`` of its own).

    git worktree add --detach /tmp/w3170413 3170413
    cd /tmp/w3170413 && PYTHONPATH=/tmp/w3170413 python /path/to/benchmarks/profile_3170413.py

The small profile's IMDB PPO built through 3170413's own API (``build_specs``, then ``train`` for
``--iters`` iterations), then its test evaluation as its ``evaluate`` runs it: generation in
``eval_batch_size`` batches, then ``score``, timed apart. One JSON line: ``iteration_s``,
``update_s``, ``generation_s`` per iteration, ``eval_generate_s``, ``eval_score_s``, and the
corpus scores (to check that both codes scored the same suite).
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    # 3170413's modules: this script runs only with a 3170413 checkout first on the path
    from grue_bench import plugins
    from grue_bench.evaluation import score
    from grue_bench.rl.rollout import generate
    from grue_bench.rl.trainer import Callback
    from grue_bench.runner.assemble import load_pool, train
    from grue_bench.runner.generation import generation_settings
    from grue_bench.runner.grid import build_specs

    overrides = [f"train_evaluation.n_iters={args.iters}"]
    (spec,) = build_specs(["imdb"], ["ppo"], [0], "small", overrides=overrides)
    config = spec.config
    iterations: list[tuple[float, float, float]] = []

    class Seconds(Callback):
        def on_iteration_start(self, trainer) -> None:
            self.started = time.perf_counter()

        def on_iteration_end(self, trainer, stats) -> None:
            seconds = time.perf_counter() - self.started
            iterations.append((seconds, stats["time/update_s"], stats["time/generation_s"]))

    result = train(config, 0, callbacks=[Seconds()])
    lm, tokenizer, model_type = result.model, result.tokenizer, result.model_type
    lm.eval()
    samples = list(load_pool(config, "test"))
    settings = generation_settings(config, evaluation=True, tokenizer=tokenizer, model_type=model_type)
    size, device = config.train_evaluation.eval_batch_size, next(lm.parameters()).device
    started, texts = time.perf_counter(), []
    for start in range(0, len(samples), size):
        prompts = [sample.prompt_or_input_text for sample in samples[start : start + size]]
        texts.extend(generate(lm, tokenizer, model_type, prompts, settings, device).texts)
    generated = time.perf_counter()
    lm.tokenizer = tokenizer  # as 3170413's evaluate: perplexity reads it from the model
    metrics = config.train_evaluation.metrics or plugins.TASKS.get(config.task).metrics
    scores = score(metrics, samples, texts, model=lm, split="test")
    figures = {
        "iteration_s": [round(row[0], 2) for row in iterations],
        "update_s": [round(row[1], 2) for row in iterations],
        "generation_s": [round(row[2], 2) for row in iterations],
        "eval_generate_s": round(generated - started, 2),
        "eval_score_s": round(time.perf_counter() - generated, 2),
        "corpus": scores.corpus(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
