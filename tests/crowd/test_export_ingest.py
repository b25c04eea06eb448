"""Export then ingest, end to end: a blinded batch from a store's runs, a results CSV written as MTurk
would with known answers, and the per-system means, win rates and agreement that come out."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from grue_bench.crowd.checks import DISTRACTOR, REFERENCE
from grue_bench.crowd.export import export_batch
from grue_bench.crowd.ingest import WIN_RATE, ingest_results
from grue_bench.crowd.stats import agreement, rating_means, win_rates
from grue_bench.crowd.templates import load_template, write_rows
from grue_bench.errors import GrueError
from grue_bench.store import CrowdItem, Store

from .mturk import SAMPLES, TASK, output_text, run_ids, write_results


def mapping(store: Store, batch_id: str) -> dict[str, list[CrowdItem]]:
    """Item id -> its slots, from the store (what the test knows and the CSV hides)."""
    items: dict[str, list[CrowdItem]] = {}
    for item in store.crowd_items(batch_id):
        items.setdefault(item.item_id, []).append(item)
    return items


def test_a_likert_batch_is_sampled_shuffled_and_blinded(store: Store, tmp_path: Path):
    exported = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=3, seed=1, checks=2)
    template = load_template(TASK)
    assert exported.columns == ["batch_id", "item_id", "concepts", "output"]
    assert set(template.placeholders) == set(exported.columns)
    assert len(exported.rows) == 3 * 2 + 2 and exported.n_prompts == 3 and exported.n_checks == 2
    items = mapping(store, exported.batch.batch_id)
    assert [row["item_id"] for row in exported.rows] != sorted(items)  # shuffled, ids say nothing
    assert len({row["item_id"] for row in exported.rows}) == len(exported.rows)
    kinds = [items[row["item_id"]][0].kind for row in exported.rows]
    assert kinds.count("check") == 2
    # Blinded: no system, run or seed in the CSV; the store knows which output each item shows.
    path = tmp_path / "batch.csv"
    write_rows(path, exported.columns, exported.rows)
    text = path.read_text()
    for word in ("ppo", "nlpo", "seed", "reference", "distractor", "attention"):
        assert not re.search(rf"\b{word}\b", text, re.IGNORECASE), word
    prompts = set()
    for row in exported.rows:
        (item,) = items[row["item_id"]]
        assert row["output"] == item.text
        if item.kind == "item":
            run = next(run for run in store.runs(task=TASK, alg=item.system) if run.id == item.run_id)
            assert item.text == output_text(item.system, run.seed, item.sample_id)
            prompts.add(item.sample_id)
        else:
            assert item.system == DISTRACTOR and item.run_id is None
            assert item.expected == {"plausibility": ["1", "2"], "fluency": ["1", "2"]}
            assert len(item.text.split()) >= 12
    assert len(prompts) == 3 and prompts <= set(SAMPLES)
    batch = store.crowd_batch(exported.batch.batch_id)
    assert batch is not None and batch.mode == "likert" and batch.template == TASK
    assert batch.spec == {"algs": ["ppo", "nlpo"], "n": 3, "seed": 1, "checks": 2, "n_prompts": 3}


def test_export_is_deterministic_and_stored_once(store: Store):
    first = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=3)
    again = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=3)
    other = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=4)
    assert first.stored and not again.stored and other.stored
    assert again.rows == first.rows and again.batch.batch_id == first.batch.batch_id
    assert other.batch.batch_id != first.batch.batch_id
    assert first.n_checks == 1  # 10% of 4 items, at least one
    count = store.db.execute("SELECT count(*) FROM crowd_batches").fetchone()[0]
    assert count == 2


# Likert answers: W1 and W2 rate every item and pass both checks; W3 rates every item at the extreme
# and fails a check, so W3 is dropped. Plausibility by (worker, system) for the two prompts in order.
PLAUSIBILITY = {("W1", "ppo"): ["4", "5"], ("W1", "nlpo"): ["2", "3"], ("W2", "ppo"): ["4", "4"]}
PLAUSIBILITY[("W2", "nlpo")] = ["2", "2"]
FLUENCY = {"ppo": "5", "nlpo": "3"}


def likert_answers(store: Store, batch_id: str, prompts: list[str]):
    items = mapping(store, batch_id)

    def answer(worker: str, row: dict[str, str]) -> dict[str, str]:
        (item,) = items[row["item_id"]]
        if item.kind == "check":
            return (
                {"plausibility": "1", "fluency": "2"}
                if worker != "W3"
                else {"plausibility": "4", "fluency": "3"}
            )
        if worker == "W3":
            return {"plausibility": "1", "fluency": "1"}
        rank = prompts.index(item.sample_id)
        return {"plausibility": PLAUSIBILITY[(worker, item.system)][rank], "fluency": FLUENCY[item.system]}

    return answer


def test_likert_results_give_means_and_hand_worked_alpha(store: Store, tmp_path: Path):
    exported = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=0, checks=2)
    batch_id = exported.batch.batch_id
    prompts = sorted({i.sample_id for i in store.crowd_items(batch_id) if i.kind == "item"})
    results = write_results(
        tmp_path / "results.csv", exported.rows, ["W1", "W2", "W3"], likert_answers(store, batch_id, prompts)
    )
    report = ingest_results(store, results)
    assert report.batch_ids == [batch_id]
    assert report.n_rows == 6 * 3 and report.n_workers == 3 and report.n_skipped == 0
    assert report.dropped == {"W3": (2, 2)} and report.unchecked == []
    assert report.n_ratings == 4 * 2 * 2  # 4 items x 2 workers x 2 axes
    assert report.median_work_time_s == 30

    ratings = store.human_ratings(task=TASK)
    assert set(ratings["worker_id"]) == {"W1", "W2"}
    assert set(ratings["system"]) == {"ppo", "nlpo"}  # the algorithm id, as the leaderboard reads it
    for system in ("ppo", "nlpo"):
        assert set(ratings.loc[ratings["system"] == system, "run_id"]) <= run_ids(store, system)
    means = rating_means(ratings).set_index(["system", "axis"])
    assert means.loc[("ppo", "plausibility"), "mean"] == pytest.approx((4 + 5 + 4 + 4) / 4)
    assert means.loc[("nlpo", "plausibility"), "mean"] == pytest.approx((2 + 3 + 2 + 2) / 4)
    assert means.loc[("ppo", "fluency"), "mean"] == 5 and means.loc[("nlpo", "fluency"), "mean"] == 3
    low, high = means.loc[("ppo", "plausibility"), ["ci_low", "ci_high"]]
    assert 4 <= low <= 4.25 <= high <= 5
    assert means.loc[("ppo", "plausibility"), "n_workers"] == 2

    # Alpha by hand. Units (ppo s1, ppo s2, nlpo s1, nlpo s2) got (4,4) (5,4) (2,2) (3,2): pairs
    # 4-4 x2, 4-5 and 5-4, 2-2 x2, 2-3 and 3-2, so n2=3 n3=1 n4=3 n5=1, n=8. Ordinal distances:
    # d(2,3)=(3+1-2)^2=4, d(4,5)=4, d(3,4)=4, d(2,4)=(7-3)^2=16, d(3,5)=(5-1)^2=16, d(2,5)=(8-2)^2=36.
    # Observed: 4 disagreeing pairs x 4 = 16. Expected: 2(3*4 + 9*16 + 3*36 + 3*4 + 1*16 + 3*4) = 608.
    # alpha = 1 - (n-1) 16 / 608 = 31/38.
    alphas = agreement(ratings).set_index("axis")
    assert alphas.loc["plausibility", "alpha"] == pytest.approx(31 / 38)
    assert alphas.loc["plausibility", "n_units"] == 4
    # Fluency: units (5,5) (5,5) (3,3) (3,3), perfect agreement.
    assert alphas.loc["fluency", "alpha"] == pytest.approx(1.0)

    before = store.db.execute("SELECT count(*) FROM human_ratings").fetchone()[0]
    ingest_results(store, results)  # re-ingesting changes nothing
    assert store.db.execute("SELECT count(*) FROM human_ratings").fetchone()[0] == before


def test_a_tolerance_keeps_a_worker_with_few_failed_checks(store: Store, tmp_path: Path):
    exported = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=0, checks=2)
    batch_id = exported.batch.batch_id
    prompts = sorted({i.sample_id for i in store.crowd_items(batch_id) if i.kind == "item"})
    results = write_results(
        tmp_path / "results.csv", exported.rows, ["W1", "W3"], likert_answers(store, batch_id, prompts)
    )
    report = ingest_results(store, results, max_check_failures=2)
    assert report.dropped == {}
    assert set(store.human_ratings()["worker_id"]) == {"W1", "W3"}


# Pairwise answers (identical for W1 and W2 except one tie): nlpo beats ppo, the reference beats both.
def pairwise_answers(store: Store, batch_id: str, prompts: list[str]):
    items = mapping(store, batch_id)

    def answer(worker: str, row: dict[str, str]) -> dict[str, str]:
        slots = {item.system: item.slot for item in items[row["item_id"]]}
        item = items[row["item_id"]][0]
        if item.kind == "check":
            return {"preference": slots[REFERENCE]}
        if REFERENCE in slots:
            return {"preference": slots[REFERENCE]}
        if worker == "W1" and prompts.index(item.sample_id) == 1:
            return {"preference": "tie"}
        return {"preference": slots["nlpo"]}

    return answer


def test_pairwise_results_give_win_rates_and_hand_worked_alpha(store: Store, tmp_path: Path):
    exported = export_batch(
        store, task=TASK, algs=["ppo", "nlpo", REFERENCE], n=2, seed=5, pairwise=True, checks=1
    )
    assert exported.columns[:2] == ["batch_id", "item_id"]
    assert exported.columns[2:] == [
        "task_name",
        "criteria",
        "output_label",
        "context_json",
        "output_a",
        "output_b",
    ]
    assert len(exported.rows) == 2 * 3 + 1
    batch_id = exported.batch.batch_id
    items = mapping(store, batch_id)
    sides = [tuple(item.system for item in items[row["item_id"]]) for row in exported.rows]
    assert len(set(sides)) > 3  # the A/B order varies
    check = next(slots for slots in items.values() if slots[0].kind == "check")
    reference_slot = next(item.slot for item in check if item.system == REFERENCE)
    assert {item.system for item in check} == {REFERENCE, DISTRACTOR}
    assert all(item.expected == {"preference": [reference_slot]} for item in check)

    prompts = sorted({i.sample_id for i in store.crowd_items(batch_id) if i.kind == "item"})
    results = write_results(
        tmp_path / "results.csv", exported.rows, ["W1", "W2"], pairwise_answers(store, batch_id, prompts)
    )
    report = ingest_results(store, results)
    assert report.dropped == {} and report.n_ratings == 6 * 2 * 2

    ratings = store.human_ratings()
    assert set(ratings["axis"]) == {WIN_RATE}
    assert ratings.loc[ratings["system"] == REFERENCE, "run_id"].isna().all()
    wins = win_rates(ratings).set_index(["system", "opponent"])
    ppo = wins.loc[("ppo", "nlpo")]
    assert (ppo["n"], ppo["wins"], ppo["ties"], ppo["losses"]) == (4, 0, 1, 3)
    assert ppo["win_rate"] == pytest.approx(0.125)
    assert wins.loc[("nlpo", "ppo"), "win_rate"] == pytest.approx(0.875)
    assert wins.loc[("reference", "ppo"), "win_rate"] == 1 and wins.loc[("ppo", "reference"), "win_rate"] == 0
    # The leaderboard's mean of win_rate per system is its win rate over every comparison.
    means = rating_means(ratings.assign(axis="x")).set_index("system")["mean"]
    assert means.to_dict() == pytest.approx({"ppo": 0.5 / 8, "nlpo": 3.5 / 8, "reference": 1.0})

    # Alpha by hand, on the first system's score of each pair (alphabetical: nlpo < ppo < reference):
    # (nlpo, ppo) s1 -> (1, 1), s2 -> (0.5, 1); the four pairs with the reference -> (0, 0).
    # Pairs: 1-1 x2, 0.5-1 and 1-0.5, 0-0 x8: n0=8 n.5=1 n1=3, n=12. d(0,.5)=(9-4.5)^2=20.25,
    # d(.5,1)=(4-2)^2=4, d(0,1)=(12-5.5)^2=42.25. Observed 2*4=8; expected
    # 2(8*20.25 + 3*4 + 24*42.25) = 2376; alpha = 1 - 11*8/2376 = 26/27.
    alphas = agreement(ratings).set_index("axis")
    assert alphas.loc[WIN_RATE, "alpha"] == pytest.approx(26 / 27)
    assert alphas.loc[WIN_RATE, "n_units"] == 6


def test_export_errors_name_the_option_and_the_fix(store: Store):
    with pytest.raises(GrueError) as caught:
        export_batch(store, task=TASK, algs=["ppo", "trpo"], n=2, seed=0)
    message = str(caught.value)
    assert "--algs" in message and "no finished run of 'trpo'" in message
    assert "nlpo, ppo, reference" in message
    with pytest.raises(GrueError, match="two or more"):
        export_batch(store, task=TASK, algs=["ppo"], n=2, seed=0, pairwise=True)
    with pytest.raises(GrueError, match="--n"):
        export_batch(store, task=TASK, algs=["ppo"], n=0, seed=0)
    with pytest.raises(GrueError, match="listed twice"):
        export_batch(store, task=TASK, algs=["ppo", "ppo"], n=2, seed=0)
    with pytest.raises(GrueError) as caught:
        export_batch(store, task="dates", algs=["ppo"], n=2, seed=0)
    assert "no crowdsourcing template 'dates'" in str(caught.value) and "--pairwise" in str(caught.value)
    assert store.db.execute("SELECT count(*) FROM crowd_batches").fetchone()[0] == 0


def test_fewer_prompts_than_asked_uses_all_shared_ones(store: Store):
    exported = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=50, seed=0, checks=0)
    assert exported.n_prompts == len(SAMPLES) and len(exported.rows) == len(SAMPLES) * 2


def test_the_batch_csv_is_read_back_unchanged(store: Store, tmp_path: Path):
    exported = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=0, pairwise=True)
    path = tmp_path / "batch.csv"
    write_rows(path, exported.columns, exported.rows)
    with path.open(encoding="utf-8", newline="") as handle:
        assert list(csv.DictReader(handle)) == exported.rows
