"""Offline classifiers (accuracy, caching, determinism) and the sentiment, VADER and intent metrics."""

import pytest
import torch
from conftest import NEEDS_WORDNET

from grue_bench.classifiers.bow import BowClassifier
from grue_bench.classifiers.cache import cached_path
from grue_bench.classifiers.offline import (
    DAILY_DIALOG_INTENT,
    IMDB_SENTIMENT,
    evaluate,
    fingerprint,
    offline_classifier,
)
from grue_bench.errors import MissingAssetError
from grue_bench.metrics.classifiers import IntentAccuracy, SentimentScore, VaderSentiment

POSITIVE = "This movie was wonderful, a brilliant and moving film with great acting. I loved it."
NEGATIVE = "This movie was awful, a boring and stupid film with terrible acting. I hated it."


def test_imdb_classifier_reaches_80_percent_on_the_shipped_test_split(sentiment_bow):
    result = evaluate(IMDB_SENTIMENT, "test")
    assert result.n == 200
    assert result.accuracy >= 0.80


def test_intent_classifier_beats_the_majority_class_by_ten_points(intent_bow):
    result = evaluate(DAILY_DIALOG_INTENT, "test")
    assert result.n == 200
    assert result.majority_accuracy == pytest.approx(0.5)  # act 1 (inform) is half the test replies
    assert result.accuracy >= result.majority_accuracy + 0.10


def test_a_cached_classifier_is_loaded_not_retrained(sentiment_bow, monkeypatch):
    path = cached_path(IMDB_SENTIMENT.name, fingerprint(IMDB_SENTIMENT))
    assert sorted(p.name for p in path.iterdir()) == ["classifier.json", "weights.safetensors"]  # no pickle

    def no_training(*args, **kwargs):
        raise AssertionError("the cached classifier was retrained")

    monkeypatch.setattr(BowClassifier, "train", no_training)
    loads = []
    load = BowClassifier.load
    monkeypatch.setattr(BowClassifier, "load", lambda directory: loads.append(directory) or load(directory))
    loaded = offline_classifier(IMDB_SENTIMENT)
    assert loads == [path]  # once, from the cache entry
    texts = [POSITIVE, NEGATIVE, *IMDB_SENTIMENT.data("validation").texts[:20]]
    for loaded_row, trained_row in zip(
        loaded.predict_proba(texts), sentiment_bow.predict_proba(texts), strict=True
    ):
        assert loaded_row == pytest.approx(trained_row, abs=1e-6)


def test_training_is_deterministic_whatever_the_thread_count():
    data = DAILY_DIALOG_INTENT.data("train")
    threads = torch.get_num_threads()
    try:  # with 1 and 2 threads DailyDialog's weights differed before the fit ran on one thread
        torch.set_num_threads(1)
        first = BowClassifier.train(data.texts, data.labels, DAILY_DIALOG_INTENT.config)
        torch.set_num_threads(2)
        second = BowClassifier.train(data.texts, data.labels, DAILY_DIALOG_INTENT.config)
        assert torch.get_num_threads() == 2  # the caller's thread count is left as it was
    finally:
        torch.set_num_threads(threads)
    assert first.vectorizer.vocabulary == second.vectorizer.vocabulary
    assert first.weight.equal(second.weight)
    assert first.bias.equal(second.bias)


def test_the_classifiers_command_prints_each_judges_held_out_figures(
    sentiment_bow, intent_bow, sentiment_judge, act_judge, capsys
):
    from grue_bench.classifiers.__main__ import main

    assert main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "imdb_sentiment@2",
        "imdb_sentiment@1",
        "daily_dialog_intent@2",
        "daily_dialog_intent@1",
        "commongen_plausibility",
    ]
    assert all("accuracy 0." in line for line in lines)
    assert "calibration error" in lines[0] and "F1 inform" in lines[2]


def test_sentiment_score_is_the_positive_probability(sentiment_judge):
    metric = SentimentScore()
    prompts = ["I watched it last night.", "I watched it last night."]
    scores, corpus = metric.compute(prompts, [POSITIVE, NEGATIVE], [[""], [""]])[
        "semantic/learned_automodel_metric"
    ]
    assert scores[0] > 0.5 > scores[1]
    assert corpus == pytest.approx(sum(scores) / 2)
    negative_ix = SentimentScore(label_ix=0).compute(prompts, [POSITIVE, NEGATIVE], [[""], [""]])
    assert negative_ix["semantic/learned_automodel_metric"][0] == pytest.approx([1 - s for s in scores])


@pytest.mark.parametrize(
    ("metric_class", "model_id"),
    [
        (SentimentScore, "lvwerra/distilbert-imdb"),
        (IntentAccuracy, "rajkumarrrk/roberta-daily-dialog-intent-classifier"),
    ],
)
def test_a_hub_classifier_offline_fails_without_the_network_naming_the_model_and_the_default(
    grue_cache, connections, metric_class, model_id
):
    with pytest.raises(MissingAssetError) as error:
        metric_class(model_name=model_id)
    assert connections == []
    message = str(error.value)
    assert model_id in message
    assert "offline default" in message
    assert "leave model_name unset" in message
    assert ("imdb_sentiment@2" if metric_class is SentimentScore else "daily_dialog_intent@2") in message


def test_vader_ranks_positive_above_negative():
    scores, corpus = VaderSentiment().compute(["", ""], [POSITIVE, NEGATIVE], [[""], [""]])[
        "sentiment/vader_compound"
    ]
    assert 1.0 >= scores[0] > 0.5
    assert -1.0 <= scores[1] < -0.5
    assert corpus == pytest.approx((scores[0] + scores[1]) / 2)


def test_intent_accuracy_compares_with_the_reference_act(intent_bow):
    metric = IntentAccuracy()
    prompts = ["Hello . <EOU> Hi , how are you ?", "Let's meet tomorrow . <EOU> Where ?"]
    replies = ["What time do you want to meet ?", "Do you know where the station is ?"]
    assert intent_bow.predict(replies) == [2, 2]  # questions
    scores, corpus = metric.compute(
        prompts, replies, [["x"], ["x"]], [{"response_act": 2}, {"response_act": 1}]
    )["intent/accuracy"]
    assert scores == [1.0, 0.0]
    assert corpus == 0.5


def test_intent_accuracy_without_meta_classifies_the_reference(intent_bow):
    references = [["What is your name ?"], ["Please close the door ."]]  # a question, a directive
    generated = ["Where is the nearest bank ?", "Where is the nearest bank ?"]
    expected = [float(act == 2) for act in intent_bow.predict([refs[0] for refs in references])]
    scores, _ = IntentAccuracy().compute(["Hi .", "Hi ."], generated, references)["intent/accuracy"]
    assert scores == expected == [1.0, 0.0]


def test_missing_shipped_data_is_a_missing_asset_error(monkeypatch, tmp_path):
    from grue_bench.classifiers import datasets

    monkeypatch.setattr(datasets, "bundled_dir", lambda name: tmp_path)
    with pytest.raises(MissingAssetError, match="shipped imdb train data not found"):
        datasets.imdb_sentiment("train")


def test_a_local_sentiment_model_folder_loads_through_transformers(tiny_sequence_classifier):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tiny_sequence_classifier(num_labels=2)
    metric = SentimentScore(model_name=str(folder), include_prompt_for_eval=False)
    scores, _ = metric.compute(["", ""], ["the cat sat", "a dog barked"], [[""], [""]])[
        "semantic/learned_automodel_metric"
    ]
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    encoded = AutoTokenizer.from_pretrained(folder)(
        ["the cat sat", "a dog barked"], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = torch.softmax(model(**encoded).logits, dim=-1)[:, 1].tolist()
    assert scores == pytest.approx(expected, abs=1e-6)


def test_a_local_intent_model_reads_the_last_utterance_then_the_reply(tiny_sequence_classifier, monkeypatch):
    metric = IntentAccuracy(model_name=str(tiny_sequence_classifier(num_labels=4)))
    seen = []
    predict = metric.classifier.classifier.predict
    monkeypatch.setattr(
        metric.classifier.classifier, "predict", lambda texts: seen.extend(texts) or predict(texts)
    )
    scores, _ = metric.compute(["hello <EOU> what ?"], ["the cat sat"], [["x"]], [{"response_act": 1}])[
        "intent/accuracy"
    ]
    assert seen == ["what ? the cat sat"]
    assert scores[0] in (0.0, 1.0)


def test_learned_reward_reads_a_long_text_from_its_end_as_rl4lms(tiny_sequence_classifier):
    """RL4LMs's learned_reward truncates on the left: prompt + generation too long loses the prompt."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from grue_bench import plugins

    folder = tiny_sequence_classifier(num_labels=2)
    AutoTokenizer.from_pretrained(folder, model_max_length=6).save_pretrained(folder)  # [CLS] 4 words [SEP]
    torch.manual_seed(0)  # larger random weights than BERT's, so that texts score apart
    model = BertForSequenceClassification(BertConfig.from_pretrained(folder, initializer_range=0.2)).eval()
    model.save_pretrained(folder)
    prompt, generation = "it rained all day long", "a dog barked at the moon"
    reward = plugins.REWARDS.get("learned_reward")(model_name=str(folder), label_ix=1)
    [score] = reward.batch([prompt], [generation], [[""]], [{}])
    tokenizer = AutoTokenizer.from_pretrained(folder)

    def p_positive(text: str) -> float:
        with torch.no_grad():
            return torch.softmax(model(**tokenizer(text, return_tensors="pt")).logits, -1)[0, 1].item()

    assert score == pytest.approx(p_positive("barked at the moon"), abs=1e-6)
    assert score != pytest.approx(p_positive("it rained all day"), abs=1e-2)


@NEEDS_WORDNET
def test_intent_accuracy_reward_weighs_intent_and_meteor_as_rl4lms(intent_bow):
    from grue_bench import plugins
    from grue_bench.metrics.meteor import Meteor

    prompts = ["Hello . <EOU> Hi , how are you ?", "Let's meet tomorrow . <EOU> Where ?"]
    replies = ["What time do you want to meet ?", "Do you know where the station is ?"]
    references = [["What time shall we meet ?"], ["At the station ."]]
    metas = [{"response_act": 2}, {"response_act": 1}]  # both replies are questions (act 2): 1, 0
    meteor = Meteor().compute(prompts, replies, references)["lexical/meteor"][0]
    assert min(meteor) > 0

    def reward(**args):
        return plugins.REWARDS.get("intent_accuracy")(**args).batch(prompts, replies, references, metas)

    assert reward() == pytest.approx([1 + meteor[0], meteor[1]])  # RL4LMs's defaults: both weights 1
    assert reward(intent_coeff=0.25, auto_coeff=0.75) == pytest.approx(
        [0.25 + 0.75 * meteor[0], 0.75 * meteor[1]]
    )
    assert reward(shape=False, intent_coeff=0.5) == [0.5, 0.0]
