"""Where the package finds its folders, and the test session's own asset cache."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import session_temp_root

from grue_bench.paths import cache_dir


def test_the_session_caches_assets_in_its_own_temporary_folder(tmp_path_factory):
    user_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "grue_bench"
    session = session_temp_root(tmp_path_factory) / "grue_cache"
    assert cache_dir() == session != user_cache
    # commands the tests start (grue run, accelerate launch) build and read assets there too
    child = subprocess.run(
        [sys.executable, "-c", "from grue_bench.paths import cache_dir; print(cache_dir())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == str(session)


def test_grue_cache_moves_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRUE_CACHE", str(tmp_path / "elsewhere"))
    assert cache_dir() == tmp_path / "elsewhere"
    assert cache_dir().is_dir()
