"""The offline judges (imdb_sentiment@2, daily_dialog_intent@2): held-out accuracy and calibration at the
thresholds of docs/METRICS.md, what an empty output gets, determinism, the cache, and the old judges
by name."""

import json
import subprocess
import sys

import pytest
import torch

from grue_bench.classifiers import cache
from grue_bench.classifiers.context_acts import ContextActClassifier, ContextActConfig
from grue_bench.classifiers.datasets import DialogueTurns, LabelledTexts, daily_dialog_turns, imdb_reviews
from grue_bench.classifiers.judges import judges_of, with_judges
from grue_bench.classifiers.measure import (
    expected_calibration_error,
    measure_act_judge,
    measure_sentiment_judge,
)
from grue_bench.classifiers.nbsvm import NbSvmClassifier, NbSvmConfig
from grue_bench.metrics.classifiers import IntentAccuracy, SentimentScore

SMALL_NBSVM = NbSvmConfig(max_n=2, bits=16, c=1.0)


@pytest.fixture(scope="module")
def sentiment_figures(sentiment_judge):
    return measure_sentiment_judge("imdb_sentiment@2")


def test_the_sentiment_judge_is_accurate_and_calibrated_on_reviews_it_never_saw(sentiment_figures):
    figures = sentiment_figures
    assert figures.n >= 2000
    assert figures.accuracy >= 0.92
    assert figures.calibration_error <= 0.05
    assert figures.mean_positive >= 0.85
    assert figures.mean_negative <= 0.15


def test_the_sentiment_judges_held_out_reviews_are_about_other_movies_and_texts():
    """The corpus's test reviews share no movie with its train and validation reviews and no text with
    any split the benchmark uses."""
    import lzma

    from grue_bench.classifiers.datasets import judge_corpus_path
    from grue_bench.data import read_jsonl
    from grue_bench.paths import bundled_dir

    with lzma.open(judge_corpus_path("imdb", "reviews.jsonl.xz"), "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    movies = {
        split: {r["movie"] for r in rows if r["split"] == split} for split in ("train", "validation", "test")
    }
    assert not movies["test"] & (movies["train"] | movies["validation"])
    assert not movies["validation"] & movies["train"]

    def words(text: str) -> str:
        return " ".join(text.encode("ascii", "ignore").decode().split()).lower()

    held_out = {words(r["text"]) for r in rows if r["split"] != "train"}
    benchmark = {
        words(f"{row['prompt']} {row['references'][0]}")
        for split in ("train", "validation", "test")
        for row in read_jsonl(bundled_dir("tasks") / "imdb" / "data" / f"{split}.jsonl")
    }
    assert len(benchmark) == 2400
    assert not held_out & benchmark


def test_the_act_judge_reads_the_previous_utterance_and_reaches_80_percent(act_judge):
    figures = measure_act_judge("daily_dialog_intent@2")
    assert figures.n >= 7000
    assert figures.accuracy >= 0.80
    assert figures.accuracy > measure_act_judge("daily_dialog_intent@1").accuracy
    assert set(figures.f1) == {1, 2, 3, 4}
    replies = ["Sure ."] * 2
    probabilities = act_judge.predict_proba(["Could you pass me the salt ?", "I am tired today ."], replies)
    assert probabilities[0] != pytest.approx(probabilities[1], abs=1e-3)  # the context moves the act


def test_an_empty_reply_has_no_act_and_never_matches(act_judge):
    metric = IntentAccuracy()
    prompts = ["How are you ? <EOU> ", "Where is it ? <EOU> "]
    scores, corpus = metric.compute(prompts, ["", "  "], [["x"], ["x"]], [{"response_act": 1}] * 2)[
        "intent/accuracy"
    ]
    assert scores == [0.0, 0.0]
    assert corpus == 0.0
    old = IntentAccuracy(judge="daily_dialog_intent@1")  # the old judge called it inform
    assert (
        old.compute(prompts, ["", ""], [["x"], ["x"]], [{"response_act": 1}] * 2)["intent/accuracy"][1] == 1.0
    )


def test_the_old_sentiment_judge_loads_by_name_and_scores_as_it_did(sentiment_bow, sentiment_judge):
    texts = ["A wonderful, moving film.", "Dull and far too long."]
    old = SentimentScore(judge="imdb_sentiment@1", include_prompt_for_eval=False)
    scores, _ = old.compute(["", ""], texts, [[""], [""]])["semantic/learned_automodel_metric"]
    assert scores == [row[1] for row in sentiment_bow.predict_proba(texts)]
    new = SentimentScore(include_prompt_for_eval=False)  # imdb_sentiment@2
    scores, _ = new.compute(["", ""], texts, [[""], [""]])["semantic/learned_automodel_metric"]
    assert scores[0] > 0.8 and scores[1] < 0.2


def test_a_run_stored_before_judges_had_names_is_rescored_with_the_old_ones():
    assert judges_of({"torch": "2.13.0"}) == {
        "sentiment": "imdb_sentiment@1",
        "intent": "daily_dialog_intent@1",
    }
    recorded = {"offline_judges": {"sentiment": "imdb_sentiment@2", "intent": "daily_dialog_intent@2"}}
    assert judges_of(recorded)["sentiment"] == "imdb_sentiment@2"
    old = judges_of({})
    assert with_judges("learned_reward", {"include_prompt_for_eval": True}, old) == {
        "include_prompt_for_eval": True,
        "judge": "imdb_sentiment@1",
    }
    assert with_judges("learned_reward", {"model_name": "lvwerra/distilbert-imdb"}, old) == {
        "model_name": "lvwerra/distilbert-imdb"
    }
    assert with_judges("intent_accuracy", {"judge": "daily_dialog_intent@2"}, old)["judge"].endswith("@2")
    assert with_judges("rouge", {}, old) == {}


def test_expected_calibration_error_by_hand():
    # bins [0.1, 0.2): 0.15 and 0.15, one positive -> |0.15 - 0.5| x 2/4; [0.9, 1.0]: 0.95, 0.95 both
    # positive -> |0.95 - 1| x 2/4
    error = expected_calibration_error([0.15, 0.15, 0.95, 0.95], [1, 0, 1, 1])
    assert error == pytest.approx(0.5 * 0.35 + 0.5 * 0.05)


def _small_reviews() -> tuple[LabelledTexts, LabelledTexts]:
    train = imdb_reviews("validation")
    return LabelledTexts(train.texts[:1500], train.labels[:1500]), LabelledTexts(
        train.texts[1500:], train.labels[1500:]
    )


def _small_turns() -> DialogueTurns:
    turns = daily_dialog_turns("validation")
    return DialogueTurns(turns.previous[:3000], turns.replies[:3000], turns.acts[:3000])


def test_fitting_gives_the_same_weights_whatever_the_thread_count():
    fit, calibration = _small_reviews()
    turns = _small_turns()
    config = ContextActConfig(bits=16, c=3.0, max_iter=50)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        first = (
            NbSvmClassifier.train(fit, calibration, SMALL_NBSVM),
            ContextActClassifier.train(turns, config),
        )
        torch.set_num_threads(2)
        second = (
            NbSvmClassifier.train(fit, calibration, SMALL_NBSVM),
            ContextActClassifier.train(turns, config),
        )
    finally:
        torch.set_num_threads(threads)
    assert (first[0].weight == second[0].weight).all() and first[0].scale == second[0].scale
    assert first[1].weight.equal(second[1].weight) and first[1].bias.equal(second[1].bias)


def test_another_process_with_other_threads_scores_the_same(sentiment_judge, grue_cache):
    texts = imdb_reviews("test").texts[:50]
    here = [row[1] for row in sentiment_judge.predict_proba(texts)]
    script = (
        "import json, sys, torch; torch.set_num_threads(2)\n"
        "from grue_bench.classifiers.offline import imdb_sentiment_judge\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps([row[1] for row in imdb_sentiment_judge().predict_proba(texts)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == here


def test_a_corrupt_or_other_version_cache_entry_is_rebuilt_not_trusted(grue_cache, caplog):
    fit, calibration = _small_reviews()
    builds = []

    def build():
        builds.append(1)
        return NbSvmClassifier.train(fit, calibration, SMALL_NBSVM)

    fingerprint = {"test": "corrupt cache"}
    first = cache.load_or_build("test_nbsvm", fingerprint, build, NbSvmClassifier.load)
    path = cache.cached_path("test_nbsvm", fingerprint)
    assert cache.load_or_build("test_nbsvm", fingerprint, build, NbSvmClassifier.load).scale == first.scale
    assert len(builds) == 1  # the second was loaded

    weights = path / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # cut short
    rebuilt = cache.load_or_build("test_nbsvm", fingerprint, build, NbSvmClassifier.load)
    assert len(builds) == 2 and "cannot be loaded" in caplog.text
    assert (rebuilt.weight == first.weight).all()

    meta = json.loads((path / "classifier.json").read_text())
    (path / "classifier.json").write_text(json.dumps({**meta, "format_version": 0}))
    cache.load_or_build("test_nbsvm", fingerprint, build, NbSvmClassifier.load)
    assert len(builds) == 3
    assert NbSvmClassifier.load(path).scale == first.scale  # the rebuilt entry is sound


def test_validate_names_the_judges_a_config_may_choose(run_grue):
    from pathlib import Path

    config = (
        Path(__file__).parents[1] / "data/rl4lms_configs/task_configs/imdb_text_continuation/gpt2_ppo.yml"
    )
    code, _, err = run_grue("validate", str(config), "--set", "reward_fn.args.judge=imdb_sentiment@9")
    assert code == 2
    assert "reward_fn.args.judge" in err and "'imdb_sentiment@2' or 'imdb_sentiment@1'" in err
    assert run_grue("validate", str(config), "--set", "reward_fn.args.judge=imdb_sentiment@1")[0] == 0
