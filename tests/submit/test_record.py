"""Recording in one transaction: a failure half-way leaves the store unchanged; --replace, --strict and
--dry-run. Re-scoring is replaced by fixed numbers here (its equality with `grue eval` is tested in
test_accept.py), so these tests are fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from grue_bench.store import Store
from grue_bench.submit import record as record_module
from grue_bench.submit.rescore import Discrepancy, Rescored, TaskScores
from grue_bench.submit.validate import ValidSubmission, validate
from grue_bench.yamlio import read_yaml_mapping
from tests.submit.conftest import SEEDS, TASK, fingerprint, split_samples


def fixed_scores(submission: ValidSubmission) -> Rescored:
    """Made-up re-scored numbers, one per seed."""
    scores = TaskScores(TASK, seeds={seed: {"lexical/bleu": 0.1 * (seed + 1)} for seed in SEEDS})
    return Rescored(tasks={TASK: scores})


@pytest.fixture
def fake_rescore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("grue_bench.submit.rescore.rescore", fixed_scores)


def test_a_failure_half_way_rolls_everything_back(make_submission, store_path: Path, monkeypatch):
    submission = validate(make_submission())
    before = fingerprint(store_path)
    calls = []
    original = Store.finish_run

    def failing_finish(self, run_id, **kwargs):
        calls.append(run_id)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return original(self, run_id, **kwargs)

    monkeypatch.setattr(Store, "finish_run", failing_finish)
    with pytest.raises(RuntimeError, match="disk full"):
        record_module.record(store_path, submission, fixed_scores(submission))
    assert len(calls) == 2  # one run was fully written inside the transaction before the failure
    assert fingerprint(store_path) == before


def test_replace_records_the_submission_again(make_submission, store_path: Path):
    submission = validate(make_submission())
    first = record_module.record(store_path, submission, fixed_scores(submission))
    second = record_module.record(store_path, submission, fixed_scores(submission), replace=True)
    assert len(first) == len(second) == len(SEEDS)
    with Store(store_path) as store:
        submitted = store.runs(status="submitted")
        assert sorted(run.id for run in submitted) == sorted(second)
        assert store.db["submissions"].count == 1
        n_generations = store.db.execute("SELECT count(*) FROM generations").fetchone()[0]
        assert n_generations == len(SEEDS) * len(split_samples())  # the earlier rows are gone


def test_strict_refuses_a_mismatch_and_changes_nothing(
    make_submission, store_path: Path, run_grue, monkeypatch
):
    def mismatching(submission: ValidSubmission) -> Rescored:
        rescored = fixed_scores(submission)
        rescored.mismatches.append(Discrepancy(TASK, 0, "lexical/bleu", 0.9, 0.1))
        return rescored

    monkeypatch.setattr("grue_bench.submit.rescore.rescore", mismatching)
    before = fingerprint(store_path)
    code, out, err = run_grue("submit", str(make_submission()), "--store", str(store_path), "--strict")
    assert code == 2
    assert "MISMATCH totto seed 0 lexical/bleu: stated 0.9, re-scored 0.1" in out
    assert "stated number differs: totto seed 0 lexical/bleu" in err
    assert fingerprint(store_path) == before


def test_dry_run_records_nothing(make_submission, tmp_path: Path, run_grue, fake_rescore):
    store = tmp_path / "fresh" / "grue.db"
    code, out, err = run_grue("submit", str(make_submission()), "--store", str(store), "--dry-run")
    assert code == 0, err
    assert "dry run: nothing recorded" in out
    assert not store.exists()


def test_a_label_used_by_another_submission_is_refused(
    make_submission, tmp_path: Path, run_grue, fake_rescore
):
    store = tmp_path / "grue.db"
    assert run_grue("submit", str(make_submission("team-a")), "--store", str(store))[0] == 0
    before = fingerprint(store)
    code, _, err = run_grue("submit", str(make_submission("team-b")), "--store", str(store))
    assert code == 2
    assert "of algorithm 'ppo (team-a)' on totto (from submission 'team-a')" in err
    assert fingerprint(store) == before


def test_restate_writes_the_rescored_numbers_and_keeps_the_rest(make_submission, run_grue, fake_rescore):
    def state(meta):  # BLEU as an older metric scored it, and perplexity (never re-scored)
        meta["tasks"][TASK]["scores"] = {
            s: {"lexical/bleu": 0.5, "fluency_metrics/perplexity": 12.0} for s in SEEDS
        }

    folder = make_submission(edit=state)
    path = folder / "submission.yaml"
    before = read_yaml_mapping(path)
    code, out, err = run_grue("submit", str(folder), "--dry-run", "--restate")
    assert code == 0, err
    assert f"restated {len(SEEDS)} number(s)" in out
    after = read_yaml_mapping(path)
    assert after["tasks"][TASK]["scores"] == {
        seed: {"lexical/bleu": 0.1 * (seed + 1), "fluency_metrics/perplexity": 12.0} for seed in SEEDS
    }
    assert {k: v for k, v in after.items() if k != "tasks"} == {
        k: v for k, v in before.items() if k != "tasks"
    }
    assert run_grue("submit", str(folder), "--dry-run", "--restate")[1].count("restated 0 number(s)") == 1


def test_restate_without_dry_run_is_refused(make_submission, store_path: Path, run_grue):
    code, _, err = run_grue("submit", str(make_submission()), "--store", str(store_path), "--restate")
    assert code == 2
    assert "--restate" in err and "add --dry-run" in err
