"""CIDEr-D with pycocoevalcap's pure-Python scorer (CommonGen)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import PositiveFloat, PositiveInt

from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import require_aligned
from grue_bench.metrics.meteor import tokenize
from grue_bench.schema import Output

# The tokens pycocoevalcap's (Java) PTBTokenizer drops after tokenizing.
PUNCTUATION = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)


def coco_tokenize(text: str) -> str:
    """Lower-cased, Treebank-tokenized text without punctuation, like COCO's PTBTokenizer step.

    The real step runs Stanford's tokenizer in Java; nltk's Treebank tokenizer is close to it.
    """
    return " ".join(token for token in tokenize(text.lower()) if token not in PUNCTUATION)


class Cider(Metric):
    """CIDEr-D per sample and its mean; IDF comes from the references of the scored samples.

    So the corpus needs several samples with different references: with one sample every
    n-gram has document frequency 1 and the score is 0.
    """

    outputs: ClassVar[Mapping[str, Output]] = {"lexical/cider": Output(display="CIDEr")}

    def __init__(self, n: PositiveInt = 4, sigma: PositiveFloat = 6.0, coco_tokenization: bool = True):
        """``coco_tokenization`` lower-cases and strips punctuation first (see ``coco_tokenize``)."""
        self._n, self._sigma, self._coco_tokenization = n, sigma, coco_tokenization

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """CIDEr-D under ``lexical/cider``."""
        from pycocoevalcap.cider.cider import Cider as CocoCider

        require_aligned(generated_texts, reference_texts)
        prepare = coco_tokenize if self._coco_tokenization else str
        # Keyed by position: samples that share a prompt are still scored separately.
        predictions = {i: [prepare(text)] for i, text in enumerate(generated_texts)}
        references = {i: [prepare(ref) for ref in refs] for i, refs in enumerate(reference_texts)}
        corpus, per_sample = CocoCider(n=self._n, sigma=self._sigma).compute_score(references, predictions)
        return {"lexical/cider": ([float(s) for s in per_sample], float(corpus))}
