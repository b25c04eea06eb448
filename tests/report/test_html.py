"""The HTML report: `grue report` writes the pages; strings from runs render as text; one seed says
that intervals are not available; CSV/JSON exports agree with the tables; same store, same report."""

from __future__ import annotations

import filecmp
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from grue_bench.store import Store

from .conftest import ALGS, EVIL, TASKS, reference_rows, start

# --- a small HTML reader ------------------------------------------------------------------------


class Page(HTMLParser):
    """Every element (tag, attributes) and every table as header labels and rows of cells."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.tables: dict[str, dict] = {}
        self._table: dict | None = None
        self._cell: dict | None = None
        self._in_head = False
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.elements.append((tag, attributes))
        if self._cell is not None and tag in ("div", "pre", "span", "a"):
            self._cell["text"] += " "  # what a reader sees as separate words
        if tag == "table":
            self._table = {"headers": [], "rows": []}
            self.tables[attributes.get("id") or f"table{len(self.tables)}"] = self._table
        elif tag == "thead":
            self._in_head = True
        elif tag == "tbody":
            self._in_head = False
        elif tag == "tr" and self._table is not None and not self._in_head:
            self._table["rows"].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = {"attrs": attributes, "text": ""}

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            cell, self._cell = self._cell, None
            cell["text"] = " ".join(cell["text"].split())
            if tag == "th":
                self._table["headers"].append(cell["text"])
            else:
                self._table["rows"][-1].append(cell)
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data

    def column(self, table: str, header: str) -> list[dict]:
        """The cells of one column, by header label (prefix match)."""
        found = self.tables[table]
        index = next(i for i, label in enumerate(found["headers"]) if label.startswith(header))
        return [row[index] for row in found["rows"]]


def csv(folder: Path, stem: str) -> pd.DataFrame:
    return pd.read_csv(folder / "data" / f"{stem}.csv")


# --- the command --------------------------------------------------------------------------------


def test_report_command_writes_the_pages(run_grue, three_seed_store: Path, tmp_path: Path, monkeypatch):
    from grue_bench.submit import floors

    asked = []
    monkeypatch.setattr(
        floors, "task_rows", lambda task, split="test": asked.append(task) or reference_rows()[task]
    )
    out = tmp_path / "reports"
    code, stdout, stderr = run_grue("report", "--store", str(three_seed_store), "--out", str(out))
    assert code == 0, stderr
    assert stdout.strip() == str(out / "index.html")
    for name in ("index.html", "task-imdb.html", "task-commongen.html", "style.css", "sortable.js"):
        assert (out / name).is_file(), name
    for name in ("overall-iqm-tiny", "task-imdb-curves", "task-imdb-scores", "task-commongen-curves"):
        assert (out / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name
    index = (out / "index.html").read_text()
    assert 'href="task-imdb.html"' in index and "https://" not in index and "http://" not in index
    assert sorted(asked) == sorted(TASKS)  # the floors of the store's tasks
    assert "floor:copy" in index and "ceiling:human" in index
    code, _, stderr = run_grue("report", "--store", str(three_seed_store), "--out", str(out), "--no-floors")
    assert (
        code == 0 and sorted(asked) == sorted(TASKS) and "floor:copy" not in (out / "index.html").read_text()
    )


def test_missing_store_is_an_error_naming_it(run_grue, tmp_path: Path):
    missing = tmp_path / "nope.sqlite"
    code, stdout, stderr = run_grue("report", "--store", str(missing), "--out", str(tmp_path / "out"))
    assert code == 2 and stdout == ""
    assert str(missing) in stderr and "results store not found" in stderr and "fix:" in stderr
    assert not missing.exists() and not (tmp_path / "out").exists()


def test_store_without_finished_runs_is_an_error(run_grue, tmp_path: Path):
    path = tmp_path / "grue.db"
    with Store(path) as store:
        start(store, "imdb", "ppo", 0)
    code, _, stderr = run_grue("report", "--store", str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert "no finished or submitted runs" in stderr and "grue run" in stderr


def test_bad_schema_is_an_error_naming_file_and_key(run_grue, three_seed_store: Path, tmp_path: Path):
    schema = tmp_path / "board.yaml"
    key = "semantic/learned_automodel_metric"
    schema.write_text(f"version: 1\nmetrics:\n  {key}: {{display: Sentiment, higher_is_better: null}}\n")
    code, _, stderr = run_grue(
        "report", "--store", str(three_seed_store), "--out", str(tmp_path / "o"), "--schema", str(schema)
    )
    assert code == 2
    assert f"{schema}: metrics.{key}: metric '{key}', the headline of task 'imdb', has no direction" in stderr
    assert not (tmp_path / "o").exists()


# --- tables and exports -------------------------------------------------------------------------


def test_overview_cells_agree_with_the_leaderboard_export(three_seed_report: Path):
    page = Page(three_seed_report / "index.html")
    board = csv(three_seed_report, "leaderboard-tiny")
    names = [cell["text"] for cell in page.column("leaderboard-tiny", "Algorithm")]
    algs = [name for name in names if ":" not in name]
    assert sorted(algs) == sorted(ALGS)
    assert names[len(algs) :] == ["floor:copy", "floor:empty", "ceiling:human"]  # after the algorithms
    overall = csv(three_seed_report, "overall-tiny").set_index("alg")
    cells = page.column("leaderboard-tiny", "Overall IQM")[: len(algs)]
    iqms = [float(cell["attrs"]["data-sort"]) for cell in cells]
    assert iqms == [overall.loc[alg, "iqm"] for alg in algs]
    assert iqms == sorted(iqms, reverse=True)  # best overall first
    for task in TASKS:
        cells = page.column("leaderboard-tiny", {"imdb": "IMDB", "commongen": "CommonGen"}[task])
        for alg, cell in zip(names, cells, strict=True):
            row = board[(board["task"] == task) & (board["alg"] == alg)].iloc[0]
            assert float(cell["attrs"]["data-sort"]) == row["mean"]
            assert cell["text"].startswith(f"{row['mean']:.3f}")
            if ":" in alg:
                assert f"95% CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}], samples=4" in cell["text"]
            else:
                interval = f"95% CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}], n=3 × 4 samples"
                assert f"{interval} · rank {int(row['rank'])}" in cell["text"]


def test_task_tables_agree_with_the_task_exports(three_seed_report: Path):
    page = Page(three_seed_report / "task-imdb.html")
    summary = csv(three_seed_report, "task-imdb-summary-tiny")
    algs = [cell["text"] for cell in page.column("metrics-tiny", "Algorithm") if ":" not in cell["text"]]
    for table, metrics in (
        ("metrics-tiny", ["semantic/learned_automodel_metric", "lexical/meteor", "sentiment/vader_compound"]),
        ("naturalness-tiny", ["fluency_metrics/perplexity", "diversity_metrics/distinct-1"]),
    ):
        for metric in metrics:
            display = summary[summary["metric"] == metric]["display"].iloc[0]
            for alg, cell in zip(algs, page.column(table, display), strict=False):
                row = summary[(summary["alg"] == alg) & (summary["metric"] == metric)].iloc[0]
                assert float(cell["attrs"]["data-sort"]) == row["mean"]
                assert f"[{row['ci_low']:.2f}" in cell["text"] or f"[{row['ci_low']:.3f}" in cell["text"]
    verdicts = csv(three_seed_report, "task-imdb-verdicts-tiny")
    shown = page.tables["verdicts-tiny"]["rows"]
    assert len(shown) == len(verdicts) == 3 + 3  # every pair of algorithms, each against the best floor
    assert set(verdicts["verdict"]) <= {"better", "worse", "tie"}
    assert (verdicts[verdicts["row_b"].str.startswith("floor:")]["row_b"] == "floor:copy").all()
    improvement = csv(three_seed_report, "task-imdb-improvement-tiny")
    shown = page.tables["improvement-tiny"]["rows"]
    assert len(shown) == len(improvement) == len(ALGS) * (len(ALGS) - 1)
    for row, cells in zip(improvement.itertuples(), shown, strict=True):
        assert [cells[0]["text"], cells[1]["text"]] == [row.alg_x, row.alg_y]
        assert float(cells[2]["attrs"]["data-sort"]) == row.probability
    # Samples side by side: the same four prompts for every algorithm, numeric ids in order.
    samples = page.tables["samples"]
    assert samples["headers"] == [
        "Prompt",
        "References",
        "nlpo (seed 0)",
        "ppo (seed 0)",
        "supervised (seed 0)",
    ]
    assert [row[0]["text"].rsplit("sample ", 1)[1] for row in samples["rows"]] == ["0", "1", "2", "10"]
    assert samples["rows"][0][2]["text"] == "This movie was [nlpo seed 0]"
    ratings = page.tables["ratings"]["rows"]
    assert [(row[0]["text"], row[1]["text"], row[3]["text"]) for row in ratings] == [
        ("nlpo", "coherence", "6"),
        ("nlpo", "sentiment", "6"),
        ("ppo", "coherence", "6"),
        ("ppo", "sentiment", "6"),
    ]


@pytest.mark.parametrize("name", ["index.html", "task-imdb.html", "task-commongen.html"])
def test_element_ids_are_unique(three_seed_report: Path, name: str):
    ids = [attrs["id"] for _, attrs in Page(three_seed_report / name).elements if "id" in attrs]
    assert ids and len(ids) == len(set(ids))


def test_every_json_export_matches_its_csv(three_seed_report: Path):
    stems = sorted(path.stem for path in (three_seed_report / "data").glob("*.csv"))
    assert {"leaderboard-tiny", "summary", "overall-tiny", "improvement", "verdicts", "final_scores"} <= set(
        stems
    )
    for stem in stems:
        table = csv(three_seed_report, stem)
        records = json.loads((three_seed_report / "data" / f"{stem}.json").read_text())
        assert len(records) == len(table), stem
        for record, (_, row) in zip(records, table.iterrows(), strict=True):
            assert list(record) == list(table.columns), stem
            for key, value in record.items():
                expected = row[key]
                if value is None:
                    assert pd.isna(expected), (stem, key)
                elif isinstance(value, float):
                    assert math.isclose(value, expected, rel_tol=1e-12), (stem, key)
                else:
                    assert value == expected or str(value) == str(expected), (stem, key)


def test_same_store_gives_the_same_report(three_seed_store: Path, three_seed_report: Path, tmp_path: Path):
    from grue_bench.report import build_report

    build_report(three_seed_store, tmp_path, references=reference_rows())
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert files == sorted(
        p.relative_to(three_seed_report) for p in three_seed_report.rglob("*") if p.is_file()
    )
    different = [f for f in files if not filecmp.cmp(tmp_path / f, three_seed_report / f, shallow=False)]
    assert different == []


# --- escaping and honesty -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["index.html", "task-imdb.html"])
def test_strings_from_runs_render_as_text(evil_report: Path, name: str):
    text = (evil_report / name).read_text()
    page = Page(evil_report / name)
    assert [attrs.get("src") for tag, attrs in page.elements if tag == "script"] == ["sortable.js"]
    assert not [tag for tag, attrs in page.elements if any(key.startswith("on") for key in attrs)]
    assert [attrs["src"] for tag, attrs in page.elements if tag == "img"] == [
        attrs["src"] for tag, attrs in page.elements if tag == "img" and attrs["src"].startswith("plots/")
    ]
    assert "javascript:" not in " ".join(str(attrs.get("href")) for _, attrs in page.elements)
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in text
    cells = [cell["text"] for table in page.tables.values() for row in table["rows"] for cell in row]
    assert any(f"my-alg{EVIL}" in cell for cell in cells)  # the submitted algorithm, as text


def test_model_generation_and_config_render_as_text(evil_report: Path):
    page = Page(evil_report / "task-imdb.html")
    models = [cell["text"] for cell in page.column("metrics-tiny", "Models")]
    assert f"gpt2{EVIL}" in models
    samples = page.tables["samples"]["rows"]
    assert samples[0][0]["text"].startswith(f"P {EVIL}")
    assert f"T {EVIL}" in [cell["text"] for cell in samples[0]]
    configs = [cell["text"] for cell in page.column("runs", "Config")]
    assert any(json.dumps(EVIL)[1:-1] in config for config in configs)
    submission = next(
        cell for cell in page.column("metrics-tiny", "Algorithm") if "submission" in cell["text"]
    )
    assert submission["attrs"]["title"] == f"submission: team{EVIL}"


def test_one_seed_report_says_intervals_are_not_available(one_seed_report: Path):
    for name in ("index.html", "task-imdb.html"):
        page = Page(one_seed_report / name)
        text = (one_seed_report / name).read_text()
        assert "Profile tiny: intervals are not available for nlpo on imdb, ppo on imdb" in text
        rows = [row for table in page.tables.values() for row in table["rows"]]
        cells = [cell["text"] for row in rows if row[0]["text"] in ("ppo", "nlpo") for cell in row]
        assert not any("95% CI" in cell for cell in cells)
        assert any("interval not available (1 seed)" in cell for cell in cells)
    index = Page(one_seed_report / "index.html")
    assert [cell["text"] for cell in index.column("leaderboard-tiny", "Mean rank")][:2] == [
        "— not ranked (2+ seeds, no flag)"
    ] * 2
    task = Page(one_seed_report / "task-imdb.html")
    assert [cell["text"] for cell in task.column("metrics-tiny", "Rank")][:2] == ["—", "—"]
    assert {cell["text"] for cell in task.column("improvement-tiny", "P(X > Y)")} == {"— needs 2+ seeds each"}
    board = csv(one_seed_report, "leaderboard-tiny")
    board = board[~board["alg"].str.contains(":")]
    assert board["ci_low"].isna().all() and board["ci_high"].isna().all() and board["rank"].isna().all()
    assert (board["n_seeds"] == 1).all()
