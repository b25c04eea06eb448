"""Fixtures for the model-based metric tests: the offline classifiers, trained once into the session's
cache (``grue_cache``, tests/conftest.py), tiny classifier folders and a network guard."""

import socket
from pathlib import Path

import pytest


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list:
    """The network look-ups and connections the test attempts, each refused at once.

    Offline, a hub model must fail without trying the network (transformers would retry for
    tens of seconds): a test asserts this list stays empty, which no timing can show reliably.
    """
    attempts: list = []

    def look_up(host, port, *args, **kwargs):
        attempts.append((host, port))
        raise socket.gaierror("network look-ups are refused in this test")

    def connect(sock, address):
        attempts.append(address)
        raise OSError("network connections are refused in this test")

    monkeypatch.setattr(socket, "getaddrinfo", look_up)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


@pytest.fixture(scope="session")
def sentiment_bow(grue_cache: Path):
    """The offline IMDB sentiment classifier, trained once into the session cache."""
    from grue_bench.classifiers.offline import IMDB_SENTIMENT, offline_classifier

    return offline_classifier(IMDB_SENTIMENT)


@pytest.fixture(scope="session")
def intent_bow(grue_cache: Path):
    """The offline DailyDialog act classifier, trained once into the session cache."""
    from grue_bench.classifiers.offline import DAILY_DIALOG_INTENT, offline_classifier

    return offline_classifier(DAILY_DIALOG_INTENT)


TINY_CORPUS = ["the cat sat on the mat", "a dog barked at the moon", "it rained all day long", "what ?"]


def save_tiny_sequence_classifier(path: Path, num_labels: int) -> Path:
    """Save a 1-layer random BERT sequence classifier and a pair-aware WordLevel tokenizer to ``path``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    tokenizer.train_from_iterator(TINY_CORPUS, trainers.WordLevelTrainer(special_tokens=specials))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]"
    )
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=num_labels,
    )
    BertForSequenceClassification(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_sequence_classifier(tmp_path_factory: pytest.TempPathFactory):
    """Factory: ``tiny_sequence_classifier(num_labels)`` -> folder of a saved tiny random classifier."""

    def make(num_labels: int) -> Path:
        return save_tiny_sequence_classifier(tmp_path_factory.mktemp(f"tiny_cls{num_labels}"), num_labels)

    return make
