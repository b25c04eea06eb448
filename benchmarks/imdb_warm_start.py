"""IMDB, tiny profile: does PPO after a supervised warm start beat the warm start? (run by hand)

    python benchmarks/imdb_warm_start.py [--seeds 3] [--iters 40] [--store imdb_warm_start.sqlite]

Runs `supervised+ppo` on IMDB for each seed through the runner, then prints, per seed and
averaged over seeds, on the held-out test split:
- `reward`: the task's reward (the sentiment classifier's positive-class probability of the
  continuation) of the test generations after the warm start and after PPO;
- `metric`: GRUE's reported IMDB sentiment score (the same classifier on prompt + continuation,
  as RL4LMs scores it), from the store.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from grue_bench.commands import add_override_argument

METRIC = "semantic/learned_automodel_metric"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=40, help="PPO iterations after the warm start")
    parser.add_argument("--store", type=Path, default=Path("imdb_warm_start.sqlite"))
    parser.add_argument("--output-dir", type=Path, default=Path("imdb_warm_start_runs"))
    add_override_argument(parser)  # --set, as for `grue run`
    args = parser.parse_args()

    from grue_bench.resolve.grid import build_specs
    from grue_bench.runner.assemble import build_reward
    from grue_bench.runner.executor import GridExecutor
    from grue_bench.runner.run import WARM_START, spec_dir
    from grue_bench.store import Store, run_key

    overrides = [
        f"train_evaluation.n_iters={args.iters}",
        f"train_evaluation.eval_every={args.iters}",
        *args.overrides,
    ]
    specs = build_specs(["imdb"], ["supervised+ppo"], list(range(args.seeds)), "tiny", overrides=overrides)
    reward = build_reward(specs[0].config)
    started = time.perf_counter()

    def held_out_reward(spec, iteration: int) -> float:
        rows = json.loads(
            (spec_dir(args.output_dir, spec) / "predictions" / f"test_{iteration}.json").read_text()
        )
        scores = reward.batch(
            [r["prompt"] for r in rows],
            [r["text"] for r in rows],
            [r["references"] for r in rows],
            [{}] * len(rows),
        )
        return statistics.mean(scores)

    with Store(args.store) as store:
        report = GridExecutor(store, args.output_dir).run(specs)
        rows = []
        for spec in specs:
            record = store.get_run(run_key(spec.task, spec.alg, spec.seed, spec.config_hash))
            if record is None or record.status != "finished":
                continue
            curve = dict(store.curves(record.id, "test")[METRIC])
            rows.append(
                {
                    "seed": spec.seed,
                    "reward_warm_start": held_out_reward(spec, WARM_START),
                    "reward_after_ppo": held_out_reward(spec, args.iters),
                    "metric_base": curve[-1],
                    "metric_warm_start": curve[WARM_START],
                    "metric_after_ppo": curve[args.iters],
                }
            )
    for row in rows:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}))
    keys = [k for k in rows[0] if k != "seed"] if rows else []
    summary = {key: round(statistics.mean(r[key] for r in rows), 4) for key in keys}
    print(
        json.dumps(
            {
                "mean_over_seeds": summary,
                "seeds": len(rows),
                "failed": report.failed,
                "ppo_beats_warm_start": bool(rows)
                and summary["reward_after_ppo"] > summary["reward_warm_start"],
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
