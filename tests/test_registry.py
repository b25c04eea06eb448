"""The generic registry: lazy entries, did-you-mean, and third-party plugins via entry points."""

import os
import subprocess
import sys
import textwrap

import pytest

from grue_bench.errors import GrueError
from grue_bench.registry import Registry, import_object


def test_entries_load_lazily_and_once():
    registry = Registry("widgets", {"dec": "json:JSONDecoder"})
    assert registry.ids() == ["dec"]
    assert registry._loaded == {}
    first = registry.get("dec")
    assert first is registry.get("dec")
    import json

    assert first is json.JSONDecoder


def test_register_object_and_decorator():
    registry = Registry("widgets")

    @registry.register("thing")
    class Thing:
        pass

    registry.register("other", dict)
    assert registry.get("thing") is Thing
    assert registry.ids() == ["other", "thing"]
    assert registry.source("thing").endswith("Thing")


def test_unknown_id_suggests_close_matches_and_lists_all():
    registry = Registry("rewards", {"rouge": "json:loads", "meteor": "json:dumps"})
    with pytest.raises(GrueError) as info:
        registry.get("rogue")
    message = str(info.value)
    assert "unknown reward id 'rogue'" in message
    assert "Did you mean 'rouge'?" in message
    assert "Available: meteor, rouge" in message


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("no_colon", "not a 'module:attribute'"),
        ("not_a_module_xyz:f", "cannot import"),
        ("json:nope", "no attribute"),
    ],
)
def test_bad_references_are_clear_errors(spec, words):
    with pytest.raises(GrueError, match=words):
        import_object(spec)


def _plugin_package(root):
    """A fake installed distribution with entry points for a reward and a task."""
    pkg = root / "grue_demo_plugin"
    task = pkg / "echo_task"
    (task / "data").mkdir(parents=True)
    for split in ("train", "validation", "test"):
        (task / "data" / f"{split}.jsonl").write_text(
            f'{{"id": "{split}-1", "prompt": "hi", "references": ["hi"]}}\n'
        )
    (task / "task.yaml").write_text(
        textwrap.dedent(
            """\
            id: echo_task
            version: 1
            name: Echo
            description: repeat the prompt
            model_type: causal
            data: {files: {train: data/train.jsonl, validation: data/validation.jsonl, test: data/test.jsonl}}
            reward_fn: {id: plugin_reward}
            metrics: [{id: reward, args: {id: plugin_reward}}]
            """
        )
    )
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            """\
            from pathlib import Path
            from grue_bench.rewards.base import RewardFunction

            TASK_DIR = Path(__file__).parent / "echo_task"

            class EchoReward(RewardFunction):
                def batch(self, prompts, generations, references, meta_infos):
                    return [float(p == g) for p, g in zip(prompts, generations)]
            """
        )
    )
    dist = root / "grue_demo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: grue-demo-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[grue_bench.rewards]\nplugin_reward = grue_demo_plugin:EchoReward\n\n"
        "[grue_bench.tasks]\necho_task = grue_demo_plugin:TASK_DIR\n"
    )


def test_entry_point_plugins_appear_in_grue_ls(tmp_path):
    _plugin_package(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-m", "grue_bench", "ls"], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    reward_line = next(line for line in lines if line.strip().startswith("plugin_reward"))
    assert "grue_demo_plugin:EchoReward (plugin grue-demo-plugin)" in reward_line
    task_line = next(line for line in lines if line.strip().startswith("echo_task"))
    assert "v1  Echo  [causal]" in task_line


def test_plugin_reward_is_usable_in_process(tmp_path, monkeypatch):
    _plugin_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("rewards")
    reward = registry.get("plugin_reward")()
    assert reward.batch(["a", "b"], ["a", "c"], [[], []], [{}, {}]) == [1.0, 0.0]


def test_task_folders_on_grue_tasks_path_are_discovered(tmp_path, monkeypatch):
    _plugin_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GRUE_TASKS_PATH", str(tmp_path / "grue_demo_plugin"))
    from grue_bench.registry import Registry as Fresh
    from grue_bench.tasks import discover_tasks, load_task

    found = discover_tasks()
    assert "echo_task" in found and "imdb" in found
    registry = Fresh("tasks", loader=load_task)
    registry.add_discoverer(discover_tasks)
    assert registry.get("echo_task").name == "Echo"


def test_duplicate_task_id_names_both_files(tmp_path, monkeypatch):
    (tmp_path / "imdb").mkdir()
    (tmp_path / "imdb" / "task.yaml").write_text("id: imdb\n")
    monkeypatch.setenv("GRUE_TASKS_PATH", str(tmp_path))
    from grue_bench.tasks import discover_tasks

    with pytest.raises(GrueError, match="defined twice") as info:
        discover_tasks()
    assert str(tmp_path / "imdb" / "task.yaml") in str(info.value)
