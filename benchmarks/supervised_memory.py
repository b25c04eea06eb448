"""Peak memory and time of one optimizer step of a task's small-profile supervised fit (run by hand).

    python benchmarks/supervised_memory.py --task cnn_dailymail --rows 4
    python benchmarks/supervised_memory.py --task cnn_dailymail --rows 4 \
        --set alg.training_args.gradient_checkpointing=true
    python benchmarks/supervised_memory.py --task cnn_dailymail --rows 4 --head every-column

The step is the one a ``grue run --alg supervised`` run takes (its config as the runner builds it,
its first batch of the shuffled train references, its precision), in a process of its own: run one
configuration per call. ``--head every-column`` computes the loss as before 2026-11-28, the LM head
over every column of the batch (``lm(**batch).loss``), for comparison. Prints one JSON line:
the batch's shape, the loss, the step's seconds and the process's peak RSS in MiB (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import resource
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cnn_dailymail")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--rows", type=int, default=None, help="rows of the batch (default: the profile's)")
    parser.add_argument("--head", choices=["reference-columns", "every-column"], default="reference-columns")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    args = parser.parse_args()

    from grue_bench.resolve.grid import build_specs
    from grue_bench.rl.policy import causal_position_ids
    from grue_bench.runner.assemble import build_run

    overrides = list(args.set)
    if args.rows:
        overrides.append(f"alg.training_args.per_device_train_batch_size={args.rows}")
    (spec,) = build_specs([args.task], ["supervised"], [0], args.profile, overrides=overrides)
    run = build_run(spec.config, 0, splits=("train",))
    stage = run.supervised(run.base.model)
    batch = stage._batches(run.pools["train"], shuffle=True, seed=0)[0]
    stage.lm.train()
    start = time.perf_counter()
    if args.head == "every-column":
        with stage.precision.autocast():
            loss = stage.lm(**batch, position_ids=causal_position_ids(batch["attention_mask"])).loss
    else:
        loss = stage._loss(batch)
    loss.backward()
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "task": args.task,
                "head": args.head,
                "set": args.set,
                "batch": list(batch["input_ids"].shape),
                "loss": round(float(loss), 4),
                "step_s": round(seconds, 1),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
