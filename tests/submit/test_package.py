"""`grue submit --from-store`: one's own runs (a store written through the Store API) packaged as a
submission folder that passes every check, then submitted back (round trip)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grue_bench.paths import run_dir
from grue_bench.store import BEFORE_TRAINING, Store
from grue_bench.submit.validate import validate
from tests.submit.conftest import SEEDS, TASK, TASK_VERSION, split_samples
from tests.submit.test_record import fixed_scores

N_ITERS = 10
CONFIG = {"task": TASK, "profile": "tiny", "alg": {"id": "ppo", "args": {"n_epochs": 4}}}
AUTHOR = ("--author", "GRUE Bench", "--contact", "bench@example.org", "--link", "https://example.org/grue")


def texts(seed: int, iteration: int) -> dict[str, str]:
    return {s.id: f"{s.references[0]} [seed {seed}, iteration {iteration}]" for s in split_samples()}


@pytest.fixture
def own_store(tmp_path: Path) -> Path:
    """Three finished ppo runs of ToTTo (zero-shot texts only in their artifacts, as the runner keeps
    them), a finished nlpo run and a failed ppo run."""
    path = tmp_path / "own.db"
    output = tmp_path / "runs"
    samples = split_samples()
    with Store(path) as store:
        for alg, seed in [*(("ppo", s) for s in SEEDS), ("nlpo", 0), ("ppo", 3)]:
            run = store.start_run(
                task=TASK,
                task_version=TASK_VERSION,
                alg=alg,
                seed=seed,
                profile="tiny",
                model="tiny-seq2seq/totto@abc",
                config=CONFIG,
                config_hash=f"hash-{alg}",
                output_dir=str(output),
            )
            if seed == 3:
                store.fail_run(run.id, "RuntimeError: boom")
                continue
            store.log_metrics(run.id, BEFORE_TRAINING, "test", {"lexical/bleu": 0.01 * (seed + 1)})
            predictions = run_dir(output, run.task, run.alg, run.seed, run.config_hash) / "predictions"
            predictions.mkdir(parents=True)
            zero_shot = [
                {"sample_id": i, "prompt": "p", "text": t, "references": ["r"]}
                for i, t in texts(seed, -1).items()
            ]
            (predictions / "test_-1.json").write_text(json.dumps(zero_shot))
            final = [
                {
                    "sample_id": s.id,
                    "prompt": "p",
                    "text": texts(seed, N_ITERS)[s.id],
                    "references": s.references,
                }
                for s in samples
            ]
            store.finish_run(
                run.id,
                iteration=N_ITERS,
                final_metrics={"test": {"lexical/bleu": 0.2 + seed / 100, "lexical/meteor": 0.3}},
                generations={"test": final},
                model="tiny-seq2seq/totto@abc",
            )
    return path


def generations(folder: Path, seed: int) -> dict[str, str]:
    lines = (folder / TASK / f"seed{seed}.jsonl").read_text().splitlines()
    return {row["id"]: row["text"] for row in map(json.loads, lines)}


@pytest.mark.parametrize(
    ("stage", "iteration", "label", "bleu"),
    [
        ("final", N_ITERS, "ppo", lambda s: 0.2 + s / 100),
        ("zero-shot", -1, "zero-shot", lambda s: 0.01 * (s + 1)),
    ],
)
def test_packaged_runs_pass_every_check(own_store, tmp_path, run_grue, stage, iteration, label, bleu):
    out = tmp_path / "baselines"
    args = ("--store", str(own_store), "--name", "mine", "--task", TASK, "--alg", "ppo", "--stage", stage)
    code, stdout, err = run_grue("submit", "--from-store", *args, *AUTHOR, "--out", str(out))
    assert code == 0, err
    folder = out / "mine"
    assert "wrote" in stdout and sorted(p.name for p in out.iterdir()) == ["mine"]  # no scratch left
    submission = validate(folder)
    meta = submission.meta
    assert meta.algorithm == label and meta.profile == "tiny" and meta.model == "tiny-seq2seq/totto@abc"
    entry = meta.tasks[TASK]
    assert entry.seeds == list(SEEDS) and entry.task_version == TASK_VERSION and entry.config == CONFIG
    for seed in SEEDS:
        assert generations(folder, seed) == texts(seed, iteration)
        assert entry.scores[seed]["lexical/bleu"] == bleu(seed)


def test_round_trip_into_a_store(own_store, tmp_path, run_grue, monkeypatch):
    monkeypatch.setattr("grue_bench.submit.rescore.rescore", fixed_scores)
    out = tmp_path / "baselines"
    args = ("--store", str(own_store), "--name", "mine", "--task", TASK, "--alg", "ppo")
    assert run_grue("submit", "--from-store", *args, *AUTHOR, "--out", str(out))[0] == 0
    target = tmp_path / "leaderboard.db"
    code, _, err = run_grue("submit", str(out / "mine"), "--store", str(target))
    assert code == 0, err
    with Store(own_store) as own, Store(target) as store:
        original = {run.seed: run for run in own.runs(alg="ppo", status="finished")}
        submitted = store.runs(status="submitted")
        assert [run.seed for run in submitted] == list(SEEDS)
        for run in submitted:
            assert run.alg == "ppo" and run.config == original[run.seed].config
            assert run.submission["name"] == "mine" and run.submission["link"] == "https://example.org/grue"
            stored = {g["sample_id"]: g["text"] for g in store.generations(run.id, "test")}
            assert stored == texts(run.seed, N_ITERS)


def test_a_selection_that_would_not_be_accepted_is_refused(own_store, tmp_path, run_grue):
    with Store(own_store) as store:
        keys = [run.key[:10] for run in store.runs(alg="ppo", status="finished")][:2]
    out = tmp_path / "baselines"
    code, _, err = run_grue(
        "submit",
        "--from-store",
        "--store",
        str(own_store),
        "--name",
        "two",
        "--runs",
        ",".join(keys),
        *AUTHOR,
        "--out",
        str(out),
    )
    assert code == 2
    assert "at least 3 are needed" in err
    assert not (out / "two").exists() and list(out.iterdir()) == []


def test_several_algorithms_or_an_existing_folder_are_refused(own_store, tmp_path, run_grue):
    out = tmp_path / "baselines"
    base = ("submit", "--from-store", "--store", str(own_store), "--name", "mine", *AUTHOR, "--out", str(out))
    code, _, err = run_grue(*base, "--task", TASK)
    assert code == 2 and "several algorithms (nlpo, ppo)" in err and "--alg" in err
    assert run_grue(*base, "--alg", "ppo")[0] == 0
    code, _, err = run_grue(*base, "--alg", "ppo")
    assert code == 2 and "already exists" in err and "--force" in err
    assert run_grue(*base, "--alg", "ppo", "--force")[0] == 0


def test_missing_metadata_flags_are_named(own_store, run_grue):
    code, _, err = run_grue(
        "submit", "--from-store", "--store", str(own_store), "--name", "x", "--alg", "ppo"
    )
    assert code == 2
    assert "--from-store needs --contact, --link, --author" in err
