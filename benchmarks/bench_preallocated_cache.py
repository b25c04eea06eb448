"""Generation with and without the preallocated key/value cache (``grue_bench/rl/preallocated_cache.py``),
alternated in one process on the same model and samples: seconds per pass and whether the outputs
are the same (run by hand, not a test).

    python benchmarks/bench_preallocated_cache.py --task narrative_qa --samples 8 --rounds 4
    python benchmarks/bench_preallocated_cache.py --task cnn_dailymail --samples 8 --rounds 4 --rollout

The small profile in bf16, its first ``--samples`` samples. By default its evaluation of ``--split``
(beam search of 4 on NarrativeQA, 5 on ToTTo and CommonGen: the same texts); with ``--rollout`` a
rollout's sampling of train prompts (each pair from the same random state: the same tokens and
log-probs).
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
from grue_bench.rl import rollout, sampler
from grue_bench.rl.precision import Precision
from grue_bench.runner.assemble import load_pool, model_type_of
from grue_bench.runner.evaluator import generate_texts
from grue_bench.runner.generation import generation_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="narrative_qa")
    parser.add_argument("--split", default="validation", help="the evaluation's split (not with --rollout)")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4, help="passes of each, alternated")
    parser.add_argument(
        "--rollout", action="store_true", help="a rollout's sampling instead of the evaluation"
    )
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    task = plugins.TASKS.get(args.task)
    config = build_config(task_config(task, "ppo", "small"), "the benchmark's generation")
    samples = list(load_pool(config, "train" if args.rollout else args.split))[: args.samples]
    model_type = model_type_of(config)
    base = load_base_lm(model_type, profile="small", corpus=lambda: task_corpus(task.id), corpus_id=task.id)
    precision = Precision("bf16", "cpu")

    def generated(round_: int):
        if not args.rollout:
            return generate_texts(
                base.model,
                base.tokenizer,
                model_type,
                config,
                samples,
                args.split,
                torch.device("cpu"),
                precision,
            )
        torch.manual_seed(round_)
        prompts = [sample.prompt_or_input_text for sample in samples]
        with precision.autocast():
            settings = generation_settings(config)
            out = rollout.generate(
                base.model, base.tokenizer, model_type, prompts, settings, torch.device("cpu")
            )
        return out.tokens.response_ids, out.logprobs

    variants = {"preallocated": rollout.preallocate, "transformers": lambda cache, room: None}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    same = True
    for round_ in range(args.rounds):
        outputs = []
        for name in sorted(variants, reverse=round_ % 2 == 1):
            rollout.preallocate = sampler.preallocate = variants[name]
            started = time.perf_counter()
            outputs.append(generated(round_))
            seconds[name].append(round(time.perf_counter() - started, 2))
        same &= outputs[0] == outputs[1] if not args.rollout else all(map(torch.equal, *outputs))
    rollout.preallocate = sampler.preallocate = variants["preallocated"]
    print(
        json.dumps(
            {"task": task.id, "rollout": args.rollout, "samples": len(samples), **seconds, "same": same}
        )
    )


if __name__ == "__main__":
    main()
