"""IMDB, tiny profile: does PPO after a supervised warm start beat the warm start? (run by hand)

    python benchmarks/imdb_warm_start.py [--seeds 3] [--iters 20] [--store imdb_warm_start.sqlite]

Runs `supervised+ppo` on IMDB for each seed through the runner, then prints, per seed and
averaged, the held-out (test split) sentiment reward — the mean positive-class probability of
the sentiment classifier, GRUE's IMDB reward — after the warm start and after PPO.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

METRIC = "semantic/learned_automodel_metric"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20, help="PPO iterations after the warm start")
    parser.add_argument("--store", type=Path, default=Path("imdb_warm_start.sqlite"))
    parser.add_argument("--output-dir", type=Path, default=Path("imdb_warm_start_runs"))
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, as for `grue run --set` (repeatable)",
    )
    args = parser.parse_args()

    from grue_bench.runner.executor import GridExecutor
    from grue_bench.runner.grid import build_specs
    from grue_bench.runner.run import WARM_START
    from grue_bench.store import Store

    overrides = [
        f"train_evaluation.n_iters={args.iters}",
        f"train_evaluation.eval_every={args.iters}",
        *args.overrides,
    ]
    specs = build_specs(["imdb"], ["supervised+ppo"], list(range(args.seeds)), "tiny", overrides=overrides)
    started = time.perf_counter()
    with Store(args.store) as store:
        report = GridExecutor(store, args.output_dir).run(specs)
        rows = []
        for record in store.runs(task="imdb", alg="supervised+ppo", status="finished"):
            curve = dict(store.curves(record.id, "test")[METRIC])
            rows.append(
                {
                    "seed": record.seed,
                    "base": curve[-1],
                    "warm_start": curve[WARM_START],
                    "warm_start+ppo": curve[max(curve)],
                }
            )
    for row in rows:
        print(json.dumps(row))
    summary = {key: statistics.mean(r[key] for r in rows) for key in ("base", "warm_start", "warm_start+ppo")}
    print(
        json.dumps(
            {
                "mean_over_seeds": summary,
                "seeds": len(rows),
                "failed": report.failed,
                "ppo_beats_warm_start": summary["warm_start+ppo"] > summary["warm_start"],
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
