"""A beam-search evaluation's generation with and without the prompt-sharing cache
(``grue_bench/rl/beam_cache.py``), alternated in one process on the same model and samples:
seconds per pass and whether the texts are the same (run by hand, not a test).

    python benchmarks/bench_beam_cache.py --task narrative_qa --samples 8 --rounds 4
    python benchmarks/bench_beam_cache.py --task totto --samples 8 --rounds 4

The small profile's evaluation of ``--split`` (its generation settings: beam search of 4 on
NarrativeQA, 5 on ToTTo and CommonGen), in bf16, its first ``--samples`` samples.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from grue_bench import plugins
from grue_bench.datapools import task_corpus
from grue_bench.models import load_base_lm
from grue_bench.resolve import build_config, task_config
from grue_bench.rl import rollout
from grue_bench.rl.precision import Precision
from grue_bench.runner.assemble import load_pool, model_type_of
from grue_bench.runner.evaluator import generate_texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="narrative_qa")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4, help="passes of each, alternated")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    task = plugins.TASKS.get(args.task)
    config = build_config(task_config(task, "ppo", "small"), "the benchmark's evaluation")
    samples = list(load_pool(config, args.split))[: args.samples]
    model_type = model_type_of(config)
    base = load_base_lm(model_type, profile="small", corpus=lambda: task_corpus(task.id), corpus_id=task.id)
    variants = {"shared": rollout.share_prompt, "plain": lambda cache, room: None}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    texts = {}
    for round_ in range(args.rounds):
        for name in sorted(variants, reverse=round_ % 2 == 1):
            rollout.share_prompt = variants[name]
            started = time.perf_counter()
            texts[name] = generate_texts(
                base.model, base.tokenizer, model_type, config, samples, args.split, torch.device("cpu"),
                Precision("bf16", "cpu"),
            )  # fmt: skip
            seconds[name].append(round(time.perf_counter() - started, 2))
    rollout.share_prompt = variants["shared"]
    print(
        json.dumps(
            {
                "task": task.id,
                "samples": len(samples),
                **seconds,
                "same_texts": len(set(map(tuple, texts.values()))) == 1,
            }
        )
    )


if __name__ == "__main__":
    main()
