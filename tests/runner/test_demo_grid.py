"""The demo's grid: what `make demo` runs (the README's `grue run --task all --alg nlpo --seeds 3`)
is the seven GRUE tasks x NLPO x seeds 0, 1, 2, each run with a valid, distinct config."""

import shlex

from conftest import REPO

from grue_bench import plugins
from grue_bench.cli import build_parser
from grue_bench.commands.run import grid_specs


def test_the_demo_runs_the_seven_grue_tasks_with_nlpo_and_three_seeds():
    demo = next(line for line in (REPO / "Makefile").read_text().splitlines() if "bin/grue run" in line)
    argv = shlex.split(demo.split("bin/grue ", 1)[1])
    assert argv == ["run", "--task", "all", "--alg", "nlpo", "--seeds", "3"]  # README's command
    specs = grid_specs(build_parser("run").parse_args(argv))
    assert len(specs) == 21
    assert sorted(spec.task for spec in specs) == sorted(list(plugins.grue_tasks()) * 3)
    assert {spec.alg for spec in specs} == {"nlpo"} and {spec.config.alg.id for spec in specs} == {"nlpo"}
    assert sorted(spec.seed for spec in specs) == [0] * 7 + [1] * 7 + [2] * 7
    assert len({spec.label for spec in specs}) == 21
    assert all(spec.config.profile == "tiny" for spec in specs)  # the embedded offline default
