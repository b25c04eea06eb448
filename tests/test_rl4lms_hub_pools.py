"""RL4LMs's WMT and CRD3 datapools: samples built as RL4LMs builds them, from hand-made rows in
the hub's shape; offline, a clear error naming the data."""

import json

import pytest

from grue_bench.datapools import rl4lms_hub as pools
from grue_bench.errors import MissingAssetError

ROWS = [
    {"translation": {"en": "Hello world.", "de": "Hallo Welt."}},
    {"translation": {"en": "Good morning.", "de": "Guten Morgen."}},
]


def _fake_hub(monkeypatch, available: dict):
    seen = []

    def hub_split(path, name, split):
        seen.append((path, name, split))
        if (path, name) not in available:
            raise MissingAssetError(f"no {path} {name}")
        return available[(path, name)]

    monkeypatch.setattr(pools, "_hub_split", hub_split)
    return seen


def test_wmt_prompts_are_prefix_source_suffix_and_the_pair_is_tried_both_ways(monkeypatch):
    seen = _fake_hub(monkeypatch, {("wmt16", "de-en"): ROWS})
    pool = pools.WMT.prepare(
        "validation",
        wmt_id="wmt16",
        source_language="en",
        target_language="de",
        prompt_prefix="translate: ",
        prompt_suffix=" =>",
    )
    assert [s.prompt_or_input_text for s in pool] == [
        "translate: Hello world. =>",
        "translate: Good morning. =>",
    ]
    assert [s.references for s in pool] == [["Hallo Welt."], ["Guten Morgen."]]
    assert [s.id for s in pool] == ["validation_0", "validation_1"]
    assert seen == [("wmt16", "en-de", "validation"), ("wmt16", "de-en", "validation")]


def test_wmt16_news_only_trains_on_news_commentary_and_evaluates_on_wmt16(monkeypatch):
    seen = _fake_hub(monkeypatch, {("news_commentary", "de-en"): ROWS, ("wmt16", "de-en"): ROWS[:1]})
    assert len(pools.WMT16NewsOnlyDatasetEnDe.prepare("train")) == 2
    assert len(pools.WMT16NewsOnlyDatasetEnDe.prepare("test")) == 1
    assert seen == [("news_commentary", "de-en", "train"), ("wmt16", "de-en", "test")]


def test_wmt14_preprocessed_reads_stas_copy(monkeypatch):
    seen = _fake_hub(monkeypatch, {("stas/wmt14-en-de-pre-processed", None): ROWS})
    assert [s.references for s in pools.WMT14PreprocessedEnDe.prepare("train")] == [
        ["Hallo Welt."],
        ["Guten Morgen."],
    ]
    assert seen == [("stas/wmt14-en-de-pre-processed", None, "train")]


def test_offline_the_hub_dataset_is_named(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(MissingAssetError, match="could not load dataset 'stas/wmt14-en-de-pre-processed'"):
        pools.WMT14PreprocessedEnDe.prepare("train")


EPISODE = {
    "TURNS": [
        {"NAMES": ["MATT"], "UTTERANCES": ["Welcome.", "Let's begin."]},
        {"NAMES": ["LAURA"], "UTTERANCES": ["Hi!"]},
        {"NAMES": ["SAM"], "UTTERANCES": ["I roll."]},
        {"NAMES": ["MATT"], "UTTERANCES": ["Roll for it."]},
    ]
}


def test_crd3_samples_start_at_the_third_turn_with_the_last_turns_and_the_speaker(tmp_path, monkeypatch):
    monkeypatch.setenv("GRUE_CACHE", str(tmp_path))
    folder = tmp_path / "crd3" / "CRD3-master" / "data"
    (folder / "aligned data").mkdir(parents=True)
    (folder / "cleaned data").mkdir()
    (folder / "aligned data" / "val_files").write_text("C1E001\n")
    (folder / "cleaned data" / "C1E001.json").write_text(json.dumps(EPISODE))
    pool = list(pools.CRD3DialogueGeneration.prepare("validation", max_context_size=2))
    assert [s.prompt_or_input_text for s in pool] == [
        "MATT: Welcome. Let's begin.\nLAURA: Hi!\nSAM: ",
        "LAURA: Hi!\nSAM: I roll.\nMATT: ",
    ]
    assert [s.references for s in pool] == [["I roll."], ["Roll for it."]]
    assert pool[0].id == "validation_ep_0_turn_2"


def test_crd3_offline_names_the_archive_and_where_to_put_it(tmp_path, monkeypatch):
    import urllib.request

    monkeypatch.setenv("GRUE_CACHE", str(tmp_path))

    def no_network(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlretrieve", no_network)
    with pytest.raises(MissingAssetError) as error:
        pools.CRD3DialogueGeneration.prepare("train", max_context_size=5)
    assert pools.CRD3_URL in str(error.value) and str(tmp_path / "crd3") in str(error.value)
