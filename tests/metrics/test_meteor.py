"""METEOR: offline WordNet from Debian's files, agreement with nltk, ceilings, floors, missing assets."""

from pathlib import Path

import pytest
from conftest import NEEDS_WORDNET
from nltk.translate.meteor_score import meteor_score

from grue_bench.assets import wordnet
from grue_bench.errors import MissingAssetError
from grue_bench.metrics.meteor import Meteor, tokenize

needs_wordnet = NEEDS_WORDNET


@pytest.fixture(scope="module")
def meteor(tmp_path_factory: pytest.TempPathFactory) -> Meteor:
    """One METEOR for the module (loading WordNet takes seconds), built in a private cache."""
    cache = tmp_path_factory.mktemp("grue_cache")
    with pytest.MonkeyPatch.context() as patch:
        import nltk.data

        patch.setenv("GRUE_CACHE", str(cache))
        patch.delenv("NLTK_DATA", raising=False)
        # Meteor puts its WordNet folder on nltk's data path; restore the path afterwards.
        patch.setattr(nltk.data, "path", list(nltk.data.path))
        metric = Meteor()  # default: builds WordNet from /usr/share/wordnet into the cache
        assert wordnet.is_nltk_wordnet(cache / "nltk_data" / "corpora" / "wordnet")
        yield metric


def test_lexnames_lists_the_45_lexicographer_files():
    lines = wordnet.lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0] == "00\tadj.all\t3"
    assert lines[3] == "03\tnoun.Tops\t1"
    assert lines[29] == "29\tverb.body\t2"
    assert lines[2] == "02\tadv.all\t4"
    assert lines[44] == "44\tadj.ppl\t3"


@needs_wordnet
def test_the_command_builds_the_cache_idempotently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("GRUE_CACHE", str(tmp_path))
    assert wordnet.main() == 0
    corpus = tmp_path / "nltk_data" / "corpora" / "wordnet"
    assert str(corpus) in capsys.readouterr().out
    assert wordnet.is_nltk_wordnet(corpus)
    assert (corpus / "lexnames").read_text() == wordnet.lexnames_text()
    before = {p.name: p.stat().st_mtime_ns for p in corpus.iterdir()}
    wordnet.build_nltk_data()
    assert {p.name: p.stat().st_mtime_ns for p in corpus.iterdir()} == before


def test_missing_wordnet_names_the_asset_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(MissingAssetError) as error:
        Meteor(wordnet_dir=str(tmp_path))
    assert "WordNet 3.0" in str(error.value) and "apt-get install wordnet-base" in str(error.value)
    # found before building, so an offline profile leaves METEOR out (a GPU machine without Debian's files)
    assert str(Meteor.missing_asset(wordnet_dir=str(tmp_path))) == str(error.value)
    assert Meteor.missing_asset() is None  # this machine: Debian's files or the session cache
    # The default lookup: no NLTK_DATA, an empty cache and an empty system folder.
    monkeypatch.setenv("GRUE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NLTK_DATA", raising=False)
    monkeypatch.setattr(wordnet, "DEBIAN_WORDNET_DIR", tmp_path / "empty")
    with pytest.raises(MissingAssetError) as error:
        Meteor()
    assert "WordNet 3.0" in str(error.value) and str(tmp_path / "empty") in str(error.value)
    assert str(Meteor.missing_asset()) == str(error.value)
    assert "NLTK_DATA" in str(error.value) and "make install" in str(error.value)
    # The set-up command only warns, so that `make install` goes on without WordNet.
    assert wordnet.main() == 0


def test_tokenize_splits_punctuation_without_punkt_data():
    tokens = ["The", "cat", "sat", ".", "It", "did", "n't", "move", "!"]
    assert tokenize("The cat sat. It didn't move!") == tokens


@needs_wordnet
@pytest.mark.parametrize(
    ("prediction", "references"),
    [
        ("the cat sat on the mat", ["the cat is sitting on the mat", "a cat sat on a mat"]),
        ("a large dog ran quickly", ["the big dog was running fast"]),
        ("He didn't go home. She stayed.", ["He did not go home, and she stayed."]),
    ],
)
def test_meteor_equals_nltk_meteor_score(meteor: Meteor, prediction: str, references: list[str]):
    per_sample, corpus = meteor.compute([""], [prediction], [references])["lexical/meteor"]
    expected = meteor_score([tokenize(r) for r in references], tokenize(prediction), wordnet=meteor.wordnet)
    assert per_sample == [expected] and corpus == expected


@needs_wordnet
def test_wordnet_synonyms_are_really_used(meteor: Meteor):
    # "car" and "auto" share a synset; nltk matches synonyms after stemming, so the pair must be
    # stem-invariant (Porter leaves both unchanged).
    synonym = meteor.compute([""], ["the car stopped"], [["the auto stopped"]])["lexical/meteor"][1]
    unrelated = meteor.compute([""], ["the cat stopped"], [["the auto stopped"]])["lexical/meteor"][1]
    assert synonym > 0.98 and unrelated < 0.34
    expected = meteor_score([["the", "auto", "stopped"]], ["the", "car", "stopped"], wordnet=meteor.wordnet)
    assert synonym == expected


@needs_wordnet
def test_ceiling_floor_and_corpus_mean(meteor: Meteor):
    texts = ["a man is riding a horse along the beach at sunset", "two children play football in the park"]
    per_sample, corpus = meteor.compute(["", ""], texts, [[t] for t in texts])["lexical/meteor"]
    assert all(score > 0.99 for score in per_sample)
    assert corpus == sum(per_sample) / 2
    floor = meteor.compute(["", ""], ["", "zebra quantum"], [[t] for t in texts])["lexical/meteor"]
    assert floor == ([0.0, 0.0], 0.0)
