"""Time `grue report` on a store (run by hand).

    python benchmarks/bench_report.py --store baselines.sqlite [--out /tmp/report] [--repeat 2]

Prints one JSON line per build: the seconds of a whole report (reading the store, the statistics,
plots and pages), with the store's size in runs and per-sample rows, and, separately, the seconds
of the statistics alone (``compute``). The floors come from the tasks' shipped ``floors.json`` (or
the cache). The means' and differences' intervals are closed-form (no resampling); only the overall
IQM's stratified bootstrap resamples (``aggregate.N_RESAMPLES``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from grue_bench.report import build_report
    from grue_bench.report.build import compute, task_infos
    from grue_bench.report.collect import read_store
    from grue_bench.report.schema import load_schema
    from grue_bench.store import Store
    from grue_bench.submit.floors import floor_rows

    with Store(args.store) as store:
        data = read_store(store)
    references = floor_rows(data.tasks)
    schema = load_schema()
    for _ in range(args.repeat):
        out = args.out or Path(tempfile.mkdtemp())
        started = time.perf_counter()
        build_report(args.store, out, references=references)
        whole = time.perf_counter() - started
        started = time.perf_counter()
        compute(data, schema, task_infos(data.tasks, schema), references)
        statistics = time.perf_counter() - started
        print(
            json.dumps(
                {
                    "runs": len(data.runs),
                    "sample_rows": len(data.samples),
                    "tasks": len(data.tasks),
                    "profiles": len(data.profiles),
                    "report_s": round(whole, 2),
                    "statistics_s": round(statistics, 2),
                }
            )
        )


if __name__ == "__main__":
    main()
