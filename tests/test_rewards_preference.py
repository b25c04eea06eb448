"""common_gen_preference_model: RL4LMs's P(good) on a tiny stand-in T5, and its missing-asset errors."""

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import NEEDS_WORDNET, RL4LMS_TASK_CONFIGS

from grue_bench import plugins
from grue_bench.errors import MissingAssetError
from grue_bench.models import tiny

PREF_CONFIG = RL4LMS_TASK_CONFIGS / "common_gen" / "t5_ppo_on_supervised.yml"
TEXTS = [
    "A dog catches a frisbee in the park.",
    "The frisbee throws a dog.",
    "",
]
PROMPT = "generate a sentence with: dog frisbee throw."
CONCEPTS = ["dog", "frisbee", "throw"]


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised tiny T5 and a BPE tokenizer trained on a few sentences, saved to a folder."""
    torch.manual_seed(0)
    corpus = [*TEXTS, PROMPT, "good", "bad", "a good sentence", "a bad sentence"] * 5
    config = tiny.TinyLMConfig(vocab_size=300, width=32, heads=2, d_ff=64, layers=1, n_positions=64)
    tokenizer = tiny.train_tokenizer(corpus, "seq2seq", config)
    model = tiny.build_model("seq2seq", tokenizer, config)
    folder = tmp_path_factory.mktemp("preference_model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def rl4lms_p_good(folder: Path, text: str) -> float:
    """RL4LMs's get_scores for one text: T5 reads the generation with a dummy label "x"; the first
    decoder position's logits of the first tokens of "good" and "bad" are softmaxed between the two."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    input_ids = torch.tensor([tokenizer(text, truncation=True).input_ids])
    labels = torch.tensor([tokenizer("x").input_ids])
    good, bad = tokenizer("good").input_ids[0], tokenizer("bad").input_ids[0]
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels).logits
    pos, neg = np.exp(logits[0, 0, good].item()), np.exp(logits[0, 0, bad].item())
    return float(pos / (pos + neg))


def score(folder: Path, **args) -> list[float]:
    reward = plugins.REWARDS.get("common_gen_preference_model")(model_path=str(folder), device="cpu", **args)
    n = len(TEXTS)
    return reward.batch([PROMPT] * n, TEXTS, [["A dog throws a frisbee."]] * n, [{"concepts": CONCEPTS}] * n)


def test_reward_is_rl4lms_p_good_of_the_generation_alone(stand_in: Path):
    expected = [rl4lms_p_good(stand_in, text) for text in TEXTS]
    assert len({round(p, 3) for p in expected}) == len(TEXTS)  # the stand-in tells the texts apart
    # batch_size 2 pads the first batch: the scores stay those of each text alone
    assert score(stand_in, batch_size=2) == pytest.approx(expected, abs=1e-5)
    # RL4LMs scores the generation without its prompt
    assert rl4lms_p_good(stand_in, PROMPT + TEXTS[0]) != pytest.approx(expected[0], abs=1e-3)


def test_missing_concepts_divide_the_preference(stand_in: Path):
    p_good = [rl4lms_p_good(stand_in, text) for text in TEXTS]
    # missing (not a substring of the lower-cased text): "throw"; none ("throws"); all three
    expected = [p_good[0] / (1 + 0.5 * 1), p_good[1] / (1 + 0.5 * 0), p_good[2] / (1 + 0.5 * 3)]
    assert score(stand_in, concept_penalty_coeff=0.5) == pytest.approx(expected, abs=1e-5)


@NEEDS_WORDNET
def test_meteor_term_is_added(stand_in: Path):
    p_good = [rl4lms_p_good(stand_in, text) for text in TEXTS]
    references = [["A dog throws a frisbee."]] * 3
    meteor = plugins.METRICS.get("meteor")().compute([PROMPT] * 3, TEXTS, references)["lexical/meteor"][0]
    assert max(meteor) > 0
    expected = [0.3 * m + p for m, p in zip(meteor, p_good, strict=True)]
    assert score(stand_in, meteor_coeff=0.3) == pytest.approx(expected, abs=1e-5)


def test_offline_without_the_weights_names_them_and_how_to_provide_them():
    with pytest.raises(MissingAssetError) as error:
        plugins.REWARDS.get("common_gen_preference_model")(model_type="11b", device="cpu", batch_size=5)
    message = str(error.value)
    assert "t5-11b~commongen_prefs.pt" in message
    assert "https://storage.googleapis.com/ai2-jack-public/rl4lms_preference_models/" in message
    assert "reward_fn.args.model_path" in message
    assert "offline profiles replace it by an offline stand-in (model_type: offline)" in message


def test_a_missing_model_path_is_named():
    with pytest.raises(MissingAssetError, match=r"model_path '/nowhere/prefs\.pt' does not exist"):
        plugins.REWARDS.get("common_gen_preference_model")(model_path="/nowhere/prefs.pt")


def test_rl4lms_config_validates(run_grue):
    code, out, err = run_grue("validate", str(PREF_CONFIG))
    assert code == 0, err
    assert "ok" in out


def test_offline_profile_takes_the_offline_stand_in_saying_so(caplog):
    """--profile tiny replaces the policy's hub LM and the 45 GB preference model, each logged."""
    from grue_bench.resolve.grid import build_specs
    from grue_bench.runner.assemble import build_reward

    caplog.set_level("INFO", logger="grue_bench.resolve.offline")
    [spec] = build_specs(["commongen"], ["ppo"], [0], "tiny", config_file=PREF_CONFIG, offline=True)
    assert "model_name" not in spec.config.alg.policy.args  # rajkumarrrk/t5-common-gen replaced
    assert spec.config.reward_fn.args == {"device": "cpu", "batch_size": 5, "model_type": "offline"}
    assert (
        "tiny profile: reward_fn.args.model_type 11b -> offline (common_gen_preference_model's "
        "offline stand-in)" in caplog.text
    )
    assert build_reward(spec.config).classifier is not None
    [written] = build_specs(["commongen"], ["ppo"], [0], None, config_file=PREF_CONFIG)
    assert written.config.reward_fn.args["model_type"] == "11b"


def test_the_offline_stand_in_is_the_plausibility_classifiers_p_good_over_the_concept_penalty():
    from grue_bench.classifiers.offline import COMMONGEN_PLAUSIBILITY, offline_classifier

    reward = plugins.REWARDS.get("common_gen_preference_model")(
        model_type="offline", concept_penalty_coeff=1.0
    )
    texts = ["A dog runs across the field.", "field the across runs dog A."]
    metas = [{"concepts": ["dog", "run", "field"]}, {"concepts": ["dog", "cat", "ball"]}]
    classifier = offline_classifier(COMMONGEN_PLAUSIBILITY)
    good = classifier.labels.index(1)
    p_good = [row[good] for row in classifier.predict_proba(texts)]
    assert p_good[0] > p_good[1]  # the sentence beats its own words shuffled
    # missing concepts: none in the first; "cat" and "ball" in the second
    expected = [p_good[0] / 1, p_good[1] / 3]
    assert reward.batch(["", ""], texts, [[], []], metas) == pytest.approx(expected)


def test_the_plausibility_classifier_tells_references_from_their_shuffled_words():
    from grue_bench.classifiers.offline import COMMONGEN_PLAUSIBILITY, evaluate

    accuracy = evaluate(COMMONGEN_PLAUSIBILITY, "validation")
    assert accuracy.majority_accuracy == 0.5
    assert accuracy.accuracy > 0.8  # measured 0.847
