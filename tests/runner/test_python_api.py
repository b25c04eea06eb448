"""README's Python API example runs as written (fewer iterations), through the same Trainer."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    section = README.read_text(encoding="utf-8").split("## Python API\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_trains_and_saves_the_model(tmp_path, capsys):
    code = _example().replace("n_iters=40", "n_iters=2").replace('"out"', repr(str(tmp_path / "out")))
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    result = namespace["result"]
    assert 1 <= len(result.history) <= 2
    assert (tmp_path / "out" / "config.json").is_file()
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == [str(i + 1) for i in range(len(result.history))]


def test_a_callback_that_returns_true_stops_training(tmp_path):
    code = _example().replace("StopAtReward(0.5)", "StopAtReward(-1.0)").replace('"out"', repr(str(tmp_path)))
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert len(namespace["result"].history) == 1
