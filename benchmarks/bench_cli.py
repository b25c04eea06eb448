"""Start-up time of `grue --help` and of every subcommand's --help (run by hand).

    python benchmarks/bench_cli.py

Prints one JSON line: seconds per command (the median of 5 runs of a fresh process).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from grue_bench.cli import SUBCOMMANDS


def seconds(argv: list[str]) -> float:
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grue_bench.cli", *argv], capture_output=True, check=True)
        runs.append(time.perf_counter() - started)
    return round(statistics.median(runs), 3)


def main() -> None:
    figures = {"grue --help": seconds(["--help"])}
    for name in SUBCOMMANDS:
        figures[f"grue {name} --help"] = seconds([name, "--help"])
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
