"""A valid submission (ToTTo, 3 seeds) is accepted: re-scored exactly as `grue eval` scores the same
files, stated numbers checked, recorded as submitted runs and shown on the leaderboard with its marker.

One module-scoped submission is re-scored once (the slow part, ~30 s) and inspected by every test.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from grue_bench.cli import main
from grue_bench.store import Store
from grue_bench.submit.rescore import agrees
from tests.submit.conftest import (
    SEEDS,
    TASK,
    fingerprint,
    metadata,
    seed_texts,
    split_samples,
    write_submission,
)

NOISY = {"semantic/bert_score"}
"""BERTScore varies in the 9th digit between two `grue eval` runs of the same file (its batches
depend on Python's hash seed); every other metric is bit for bit reproducible."""


@dataclass
class Accepted:
    folder: Path
    store: Path
    code: int
    out: str
    err: str
    evaluated: dict[str, float]
    """`grue eval --json` scores of seed 0's file."""


def grue(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Accepted:
    root = tmp_path_factory.mktemp("accepted")
    folder = write_submission(root / "baselines", metadata("team-a"))
    code, out, err = grue(
        "eval", "--task", TASK, "--predictions", str(folder / TASK / "seed0.jsonl"), "--json"
    )
    assert code == 0, err
    evaluated = json.loads(out)["scores"]
    meta = yaml.safe_load((folder / "submission.yaml").read_text())
    meta["tasks"][TASK]["scores"] = {
        0: evaluated,  # all true
        1: {"lexical/bleu": 0.999},  # wrong
        2: {"fluency_metrics/perplexity": 3.0},  # not in ToTTo's suite: cannot be re-scored
    }
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    store = root / "grue.db"
    code, out, err = grue("submit", str(folder), "--store", str(store))
    return Accepted(folder, store, code, out, err, evaluated)


def test_accepted_and_recorded(accepted: Accepted):
    assert accepted.code == 0, accepted.err
    assert f"recorded {len(SEEDS)} run(s) as submitted" in accepted.out


def test_rescored_numbers_equal_grue_eval_on_the_same_file(accepted: Accepted):
    with Store(accepted.store) as store:
        run = next(r for r in store.runs(task=TASK) if r.seed == 0)
        recorded = {name: points[-1] for name, points in store.curves(run.id, "test").items()}
    assert set(recorded) == set(accepted.evaluated)
    assert all(iteration == 0 for iteration, _ in recorded.values())
    for name, value in accepted.evaluated.items():
        if name in NOISY:
            assert agrees(recorded[name][1], value), (name, recorded[name][1], value)
        else:
            assert recorded[name][1] == value, name  # the same code path: bit for bit


def test_stated_numbers_are_checked_never_trusted(accepted: Accepted):
    n = len(accepted.evaluated)
    assert f"stated numbers: {n} confirmed, 1 differ, 1 not re-scored" in accepted.out
    assert "MISMATCH totto seed 1 lexical/bleu: stated 0.999, re-scored" in accepted.out
    assert "unverified totto seed 2 fluency_metrics/perplexity: stated 3, not re-scored" in accepted.out
    with Store(accepted.store) as store:
        run = next(r for r in store.runs(task=TASK) if r.seed == 1)
        bleu = store.curves(run.id, "test")["lexical/bleu"]
        assert bleu != [(0, 0.999)]
        run = next(r for r in store.runs(task=TASK) if r.seed == 2)
        assert "fluency_metrics/perplexity" not in store.curves(run.id, "test")


def test_runs_are_marked_submitted_with_their_card_and_generations(accepted: Accepted):
    with Store(accepted.store) as store:
        runs = store.runs(task=TASK)
        assert [(r.seed, r.status, r.source, r.alg) for r in runs] == [
            (seed, "submitted", "submission", "ppo (team-a)") for seed in SEEDS
        ]
        for run in runs:
            assert run.submission["name"] == "team-a"
            assert run.submission["link"] == "https://example.org/team-a/code"
            assert run.config == metadata("team-a")["config"]
            assert run.model == "t5-base" and run.profile == "paper"
            texts = {g["sample_id"]: g["text"] for g in store.generations(run.id, "test", 0)}
            expected = dict(zip([s.id for s in split_samples()], seed_texts(run.seed), strict=True))
            assert texts == expected
            # the re-scored per-sample values, whose mean is each re-scored corpus number
            per_sample = store.sample_scores(run.id, "test", 0)
            logged = dict(store.curves(run.id, "test"))
            assert per_sample and set(per_sample) <= set(logged)
            for name, values in per_sample.items():
                assert set(values) == set(texts)
                assert sum(values.values()) / len(values) == pytest.approx(logged[name][0][1])
        row = next(store.db["submissions"].rows)
    meta = json.loads(row["meta"])
    assert row["name"] == "team-a" and Path(row["path"]) == accepted.folder.resolve()
    digest = hashlib.sha256((accepted.folder / TASK / "seed1.jsonl").read_bytes()).hexdigest()
    assert meta["tasks"][TASK]["files"]["1"] == {"path": f"{TASK}/seed1.jsonl", "sha256": digest}
    assert meta["stated_numbers"]["mismatches"] == [
        line.removeprefix("  MISMATCH ") for line in accepted.out.splitlines() if "MISMATCH" in line
    ]


def test_the_leaderboard_shows_the_submission_with_its_marker_and_link(accepted: Accepted, tmp_path: Path):
    code, _, err = grue("report", "--store", str(accepted.store), "--out", str(tmp_path / "report"))
    assert code == 0, err
    index = (tmp_path / "report" / "index.html").read_text()
    assert '<a class="badge" href="https://example.org/team-a/code"' in index
    assert "ppo (team-a)" in index
    assert 'title="submission: team-a"' in index


def test_submitting_the_same_name_again_is_refused_and_changes_nothing(accepted: Accepted):
    before = fingerprint(accepted.store)
    code, out, err = grue("submit", str(accepted.folder), "--store", str(accepted.store))
    assert code == 2
    assert "a submission named 'team-a' is already recorded" in err and "--replace" in err
    assert out == ""
    assert fingerprint(accepted.store) == before
