"""Test-wide settings: offline, one thread, and a fresh cache per session."""

import importlib
import os
from types import ModuleType

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from grue_bench.assets.wordnet import DEBIAN_WORDNET_DIR
from grue_bench.rl.precision import bf16_supported

REPO = Path(__file__).resolve().parent.parent
RL4LMS_CONFIGS = Path(__file__).resolve().parent / "data" / "rl4lms_configs"
RL4LMS_TASK_CONFIGS = RL4LMS_CONFIGS / "task_configs"
"""RL4LMs's own 44 task configs, unchanged (see SOURCE.md there)."""
IN_CI = os.environ.get("CI") == "true"
"""Under ``CI=true`` nothing is skipped for a missing asset or package: the tests that need it run
and fail, naming it, so the suite cannot pass by skipping."""


def skip_unless_in_ci(missing: bool, reason: str) -> pytest.MarkDecorator:
    """``skipif(missing)`` on a developer's machine; under ``CI=true``, no skip."""
    return pytest.mark.skipif(missing and not IN_CI, reason=reason)


NEEDS_NATIVE_BF16 = pytest.mark.skipif(
    not bf16_supported(torch.device("cpu")),
    reason="this CPU has no bfloat16 instructions (AVX-512 BF16 or AMX): a bf16 run is refused here",
)
"""For a test of what runs in bf16 on this CPU: skipped on one without bfloat16 instructions, where
GRUE Bench refuses bf16 (``rl/precision.check_supported``), in CI too (a machine's instructions, like
a GPU, are not something CI can install)."""


def need_module(name: str) -> ModuleType:
    """``pytest.importorskip(name)`` on a developer's machine; under ``CI=true`` a plain import,
    which fails the test when the package is missing."""
    return importlib.import_module(name) if IN_CI else pytest.importorskip(name)


NEEDS_WORDNET = skip_unless_in_ci(
    not (DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason="WordNet 3.0 not installed in /usr/share/wordnet (apt-get install wordnet-base)",
)
"""Skips a test that scores METEOR (it builds WordNet from Debian's files) where WordNet is missing,
except under CI."""


def session_temp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test session's base temp dir: under pytest-xdist, the one above each worker's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def grue_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``GRUE_CACHE`` for the whole session (and the commands it starts): a fresh folder.

    Tests then depend on nothing an earlier session or ``make install`` left in the user's
    cache, and write nothing there. What they need is built into it on first use: the tiny
    base LMs (a minute or two each), the offline classifiers, WordNet from Debian's files, the
    small profile's conversion. xdist workers share the folder, so each is built once per
    session (entries are staged and renamed into place, so concurrent builders are safe).
    """
    path = session_temp_root(tmp_path_factory) / "grue_cache"
    path.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRUE_CACHE", str(path))
        yield path


@pytest.fixture(scope="session")
def sentiment_judge(grue_cache):
    """imdb_sentiment@2, built once into the session cache."""
    from grue_bench.classifiers.offline import imdb_sentiment_judge

    return imdb_sentiment_judge()


@pytest.fixture(scope="session")
def act_judge(grue_cache):
    """daily_dialog_intent@2, built once into the session cache."""
    from grue_bench.classifiers.offline import daily_dialog_act_judge

    return daily_dialog_act_judge()


@pytest.fixture
def run_grue(capsys):
    """Run ``grue`` in-process; returns (exit code, stdout, stderr)."""
    from grue_bench.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a test module (see tests/browser.py)."""
    from browser import Browser

    opened = Browser()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="session")
def tiny_finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished two-iteration PPO run of increasing_numbers (in-process); returns its folder,
    holding ``s.sqlite`` (the store) and ``runs/`` (the artifacts)."""
    from grue_bench.cli import main

    root = tmp_path_factory.mktemp("tiny_run")
    fast = [
        "train_evaluation.n_iters=2",
        "alg.args.n_steps=8",
        "alg.args.batch_size=8",
        "datapool.args.n_samples=16",
    ]
    code = main(
        [
            "run",
            "--task=increasing_numbers",
            "--alg=ppo",
            "--seed-list=0",
            f"--store={root / 's.sqlite'}",
            f"--output-dir={root / 'runs'}",
            *[f"--set={o}" for o in fast],
        ]
    )
    assert code == 0
    return root
