"""A non-editable install (a built wheel) carries the tasks, their data and the templates."""

import os
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO

from grue_bench import plugins


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return next(out.glob("grue_bench-*.whl"))


def test_wheel_contains_tasks_and_their_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for task in plugins.grue_tasks():
        assert f"grue_bench/_bundled/tasks/{task}/task.yaml" in names
        assert f"grue_bench/_bundled/tasks/{task}/data/test.jsonl" in names
        assert f"grue_bench/_bundled/tasks/{task}/data/SOURCE.md" in names
    assert "grue_bench/_bundled/tasks/_shared/seq2seq.yaml" in names


def test_wheel_installs_the_grue_console_script(wheel):
    with zipfile.ZipFile(wheel) as archive:
        entry_points = next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        lines = archive.read(entry_points).decode().splitlines()
    assert lines[lines.index("[console_scripts]") + 1] == "grue = grue_bench.cli:main"


def test_installed_wheel_finds_its_tasks_without_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        check=True,
    )
    code = (
        "import grue_bench, sys\n"
        "from grue_bench import plugins\n"
        "from grue_bench.datapools import TaskPool\n"
        f"assert grue_bench.__file__.startswith({str(site)!r}), grue_bench.__file__\n"
        "print(len(TaskPool.prepare('test', task='imdb')), plugins.TASKS.get('commongen').directory)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    count, directory = result.stdout.split()
    assert count == "200"
    assert directory.startswith(str(site)) and "_bundled" in directory
