"""Did a change keep the numbers? Every iteration's statistics of a checkout's ``bench_rl.py`` run,
and the relative differences between two such runs (run by hand, not a test).

    python benchmarks/same_numbers.py run /tmp/wt_old old.json -- --profile small --alg ppo ...
    python benchmarks/same_numbers.py run . new.json --pad-prompts-to 64 -- --profile small ...
    python benchmarks/same_numbers.py compare old.json new.json

``run`` imports ``grue_bench`` and ``benchmarks/bench_rl.py`` from CHECKOUT (a git worktree of the
older commit), so it also serves commits older than ``bench_rl.py --stats-out``. ``--pad-prompts-to``
pads every prompt batch to that width, as code before 7eb150a did (``max_prompt_length``): with
the same padding, a change that keeps the arithmetic keeps the statistics to float rounding; with
another padding width, attention sums its keys in other blocks and a sampled token flips sooner.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from pathlib import Path


def run(checkout: Path, out: Path, pad_to: int | None, bench_args: list[str]) -> None:
    """``bench_rl.py`` of ``checkout`` with ``bench_args``; each iteration's statistics to ``out``."""
    sys.path[:0] = [str(checkout), str(checkout / "benchmarks")]
    if pad_to is not None:
        from grue_bench.rl import rollout

        padded = rollout._padded
        rollout._padded = lambda rows, pad_id, left, width: padded(rows, pad_id, left, pad_to)
    bench = runpy.run_path(str(checkout / "benchmarks" / "bench_rl.py"), run_name="bench_rl")
    timing = bench["Timing"]
    iteration_end = timing.on_iteration_end

    def on_iteration_end(self, trainer, stats) -> None:
        iteration_end(self, trainer, stats)
        numbers = [{k: v for k, v in s.items() if not k.startswith("time/")} for s in self.stats]
        out.write_text(json.dumps(numbers, indent=1))

    timing.on_iteration_end = on_iteration_end
    sys.argv = ["bench_rl.py", *bench_args]
    bench["main"]()


def compare(first: Path, second: Path) -> None:
    """Per iteration, each statistic's relative difference (0 where equal)."""
    a, b = (json.loads(path.read_text()) for path in (first, second))
    for iteration, (x, y) in enumerate(zip(a, b, strict=True)):
        cells = []
        for key in x.keys() & y.keys():
            u, v = x[key], y[key]
            difference = 0.0 if u == v else abs(u - v) / max(abs(u), abs(v))
            cells.append(f"{key} {difference:.1e}")
        print(f"iteration {iteration}: " + ", ".join(sorted(cells)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run", help="a checkout's bench_rl.py, its statistics to OUT")
    running.add_argument("checkout", type=Path)
    running.add_argument("out", type=Path)
    running.add_argument("--pad-prompts-to", type=int, help="pad prompts to this width (as before 7eb150a)")
    comparing = commands.add_parser("compare", help="two runs' statistics, iteration by iteration")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)  # bench_rl.py's arguments follow "--"
    args = parser.parse_args(argv[:split])
    if args.command == "run":
        run(args.checkout.resolve(), args.out, args.pad_prompts_to, argv[split + 1 :])
    else:
        compare(args.first, args.second)


if __name__ == "__main__":
    main()
