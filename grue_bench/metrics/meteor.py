"""METEOR with nltk and an offline WordNet 3.0 (see grue_bench/assets/wordnet.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import NonNegativeFloat

from grue_bench.assets.wordnet import find_wordnet, load_wordnet, missing_wordnet
from grue_bench.errors import MissingAssetError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import mean, require_aligned, split_into_sentences
from grue_bench.schema import Output, UnitInterval


def tokenize(text: str) -> list[str]:
    """Words as nltk's ``word_tokenize`` gives them, without its punkt data.

    Sentences are split on end punctuation, then each is tokenized by nltk's Treebank-style
    ``NLTKWordTokenizer`` (which ``word_tokenize`` itself uses per sentence; it needs no data).
    """
    from nltk.tokenize import NLTKWordTokenizer

    tokenizer = NLTKWordTokenizer()
    return [token for sentence in split_into_sentences(text) for token in tokenizer.tokenize(sentence)]


class Meteor(Metric):
    """nltk's METEOR per sample against all references; corpus = mean (as HF ``evaluate``'s meteor)."""

    outputs: ClassVar[Mapping[str, Output]] = {"lexical/meteor": Output(display="METEOR")}

    def __init__(
        self,
        alpha: UnitInterval = 0.9,
        beta: NonNegativeFloat = 3.0,
        gamma: UnitInterval = 0.5,
        wordnet_dir: str | None = None,
    ):
        """``wordnet_dir`` is an nltk ``corpora/wordnet`` folder; by default it is found in NLTK_DATA
        or built in the cache from /usr/share/wordnet. Raises MissingAssetError without WordNet."""

        corpus = Path(wordnet_dir) if wordnet_dir is not None else find_wordnet()
        self.wordnet = load_wordnet(corpus)  # public: tests compare with nltk on the same reader
        self._params = {"alpha": alpha, "beta": beta, "gamma": gamma}

    @classmethod
    def missing_asset(cls, wordnet_dir: str | None = None, **args: Any) -> MissingAssetError | None:
        """WordNet, when neither ``wordnet_dir`` nor NLTK_DATA, the cache or Debian's files provide it
        (an offline profile then leaves METEOR out of the suite, saying why)."""
        return missing_wordnet(Path(wordnet_dir) if wordnet_dir is not None else None)

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """METEOR under ``lexical/meteor``."""
        from nltk.translate.meteor_score import meteor_score

        require_aligned(generated_texts, reference_texts)
        wordnet, params = self.wordnet, self._params
        per_sample = [
            float(meteor_score([tokenize(r) for r in refs], tokenize(text), wordnet=wordnet, **params))
            for text, refs in zip(generated_texts, reference_texts, strict=True)
        ]
        return {"lexical/meteor": (per_sample, mean(per_sample))}
