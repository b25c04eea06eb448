"""RL4LMs's IMDB datapools on the shipped reviews: ``imdb`` (RL) and ``imdb_seq2seq`` (supervised),
with RL4LMs's splits, references and arguments."""

from grue_bench.datapools import TaskPool
from grue_bench.datapools.rl4lms import IMDB, IMDBForSeq2Seq

SHIPPED_TRAIN = list(TaskPool.prepare("train", "imdb"))


def _ids(pool) -> set[str]:
    return {sample.id for sample in pool}


def test_imdb_train_and_validation_are_an_80_20_cut_of_the_train_reviews_chosen_by_seed():
    train, validation = IMDB.prepare("train", seed=42), IMDB.prepare("validation", seed=42)
    assert (len(train), len(validation)) == (
        int(0.8 * len(SHIPPED_TRAIN)),
        len(SHIPPED_TRAIN) - int(0.8 * len(SHIPPED_TRAIN)),
    )
    assert _ids(train) | _ids(validation) == _ids(SHIPPED_TRAIN) and not _ids(train) & _ids(validation)
    assert _ids(IMDB.prepare("train", seed=42)) == _ids(train)
    assert _ids(IMDB.prepare("train", seed=7)) != _ids(train)
    assert _ids(IMDB.prepare("test", seed=42)) == _ids(TaskPool.prepare("test", "imdb"))


def test_imdb_prompts_are_half_the_review_and_the_reference_is_the_whole_review():
    shipped = {s.id: s for s in SHIPPED_TRAIN}
    for sample in list(IMDB.prepare("train", seed=0))[:20]:
        original = shipped[sample.id]
        assert sample.prompt_or_input_text == original.prompt_or_input_text
        assert sample.references == [f"{original.prompt_or_input_text} {original.references[0]}"]


def test_imdb_seq2seq_trains_on_positive_reviews_only_the_first_positive_ratio_of_them():
    train = list(IMDBForSeq2Seq.prepare("train"))
    assert train and all(s.meta_data["label"] == 1 for s in train)
    assert {s.meta_data["label"] for s in IMDBForSeq2Seq.prepare("validation")} == {0, 1}
    half = list(IMDBForSeq2Seq.prepare("train", positive_ratio=0.5))
    assert [s.id for s in half] == [s.id for s in train[: int(len(train) * 0.5)]]


def test_imdb_seq2seq_references_are_the_second_half_and_the_whole_review_is_meta_data():
    shipped = {s.id: s for s in SHIPPED_TRAIN}
    for sample in list(IMDBForSeq2Seq.prepare("train"))[:20]:
        original = shipped[sample.id]
        assert sample.references == original.references
        assert sample.meta_data["reference"] == f"{original.prompt_or_input_text} {original.references[0]}"
