"""`grue crowd export | ingest | preview` from the command line, and the ingested ratings on the
leaderboard's task page."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from grue_bench.crowd.templates import load_template
from grue_bench.store import Store

from .mturk import TASK, dump, write_results


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def export(run_grue, store_path: Path, out: Path, *extra: str) -> list[dict[str, str]]:
    code, stdout, err = run_grue(
        "crowd", "export", "--store", str(store_path), "--task", TASK, "--algs", "ppo,nlpo",
        "--n", "2", "--seed", "0", "--checks", "1", "--out", str(out), *extra,
    )  # fmt: skip
    assert code == 0, err
    assert f"wrote {out}" in stdout and "2 prompts, 1 attention check)" in stdout
    assert out.with_suffix(".html").read_text() == load_template(TASK).text  # the page to upload
    return read_csv(out)


def answers_by_kind(store_path: Path):
    """W1 and W2 pass the check and rate 4 / 2; W3 fails it."""
    with Store(store_path) as store:
        (batch_id,) = [row["batch_id"] for row in store.db["crowd_batches"].rows]
        kinds = {item.item_id: item.kind for item in store.crowd_items(batch_id)}

    def answer(worker: str, row: dict[str, str]) -> dict[str, str]:
        if kinds[row["item_id"]] == "check":
            return {"plausibility": "5" if worker == "W3" else "1", "fluency": "1"}
        return {"plausibility": "4" if worker == "W1" else "2", "fluency": "5"}

    return answer


def test_export_ingest_and_the_leaderboard(run_grue, store_path: Path, tmp_path: Path):
    rows = export(run_grue, store_path, tmp_path / "batch.csv")
    assert len(rows) == 5 and list(rows[0]) == ["batch_id", "item_id", "concepts", "output"]
    results = write_results(tmp_path / "results.csv", rows, ["W1", "W2", "W3"], answers_by_kind(store_path))

    code, out, err = run_grue("crowd", "ingest", str(results), "--store", str(store_path))
    assert code == 0, err
    assert "15 rows, 0 rejected assignments skipped, 3 workers, 16 ratings stored" in out
    assert "attention checks: 3 answered, 1 failed" in out
    assert "dropped worker W3: failed 1 of 1 attention checks" in out
    assert "Mean ratings (95% bootstrap interval)" in out and "Krippendorff's alpha, ordinal" in out
    assert "plausibility" in out and "nlpo" in out

    from grue_bench.report import build_report

    index = build_report(store_path, tmp_path / "report")
    page = (index.parent / f"task-{TASK}.html").read_text()
    assert "Human ratings" in page
    section = page[page.index("Human ratings") :]
    assert "plausibility" in section and "ppo" in section and "nlpo" in section
    overview = index.read_text()
    assert "human_ratings" in overview  # the ratings table for download
    ratings = overview[overview.index('id="section-ratings"') :]  # and the ratings section of the overview
    assert 'id="ratings-commongen"' in ratings and "plausibility" in ratings and "nlpo" in ratings


def test_a_rejected_results_file_exits_2_and_changes_nothing(run_grue, store_path: Path, tmp_path: Path):
    rows = export(run_grue, store_path, tmp_path / "batch.csv")
    results = write_results(
        tmp_path / "results.csv", rows, ["W1"], lambda worker, row: {"plausibility": "6", "fluency": "3"}
    )
    before = dump(store_path)
    code, out, err = run_grue("crowd", "ingest", str(results), "--store", str(store_path))
    assert code == 2 and out == ""
    assert "5 problems in" in err and "Answer.plausibility '6' is out of range; allowed: 1, 2, 3, 4, 5" in err
    assert dump(store_path) == before


def test_export_again_says_the_batch_is_stored(run_grue, store_path: Path, tmp_path: Path):
    first = export(run_grue, store_path, tmp_path / "one.csv")
    code, out, _ = run_grue(
        "crowd", "export", "--store", str(store_path), "--task", TASK, "--algs", "ppo,nlpo",
        "--n", "2", "--seed", "0", "--checks", "1", "--out", str(tmp_path / "two.csv"),
    )  # fmt: skip
    assert code == 0 and "already in the store" in out
    assert read_csv(tmp_path / "two.csv") == first


def test_preview_writes_the_task_and_pairwise_pages(run_grue, tmp_path: Path):
    out = tmp_path / "preview"
    code, stdout, err = run_grue("crowd", "preview", "--task", "totto", "--out", str(out))
    assert code == 0, err
    names = sorted(path.name for path in out.iterdir())
    assert names == [f"pairwise-{i}.html" for i in range(1, 5)] + [f"totto-{i}.html" for i in range(1, 4)]
    assert stdout.split() == [
        str(out / name) for name in ["totto-1.html", "totto-2.html", "totto-3.html"]
    ] + [str(out / f"pairwise-{i}.html") for i in range(1, 5)]


def test_preview_of_a_batch_csv(run_grue, store_path: Path, tmp_path: Path):
    export(run_grue, store_path, tmp_path / "batch.csv")
    code, _, err = run_grue(
        "crowd", "preview", "--task", TASK, "--csv", str(tmp_path / "batch.csv"), "--limit", "2",
        "--out", str(tmp_path / "p"),
    )  # fmt: skip
    assert code == 0, err
    assert sorted(path.name for path in (tmp_path / "p").iterdir()) == [
        "commongen-1.html",
        "commongen-2.html",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["crowd", "preview", "--task", "dates"], "no crowdsourcing template 'dates'"),
        (["crowd", "preview", "--csv", "x.csv"], "--csv renders one template"),
        (["crowd", "ingest", "r.csv", "--store", "missing.db"], "results store not found"),
        (["crowd", "export", "--store", "missing.db", "--task", TASK, "--algs", "ppo"], "--store"),
    ],
)
def test_user_errors_exit_2_with_the_fix(run_grue, tmp_path: Path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_grue(*argv)
    assert code == 2 and message in err and "fix:" in err


def test_crowd_needs_a_subcommand(capsys):
    from grue_bench.cli import main

    with pytest.raises(SystemExit) as info:
        main(["crowd"])
    assert info.value.code == 2
    assert "export" in capsys.readouterr().err
