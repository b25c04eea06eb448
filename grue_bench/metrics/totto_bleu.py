"""ToTTo's official BLEU (RL4LMs ``bleu_totto``): corpus BLEU over the whole split and over its
overlap and non-overlap subsets, as ToTTo's ``totto_bleu_eval.sh`` computes it.

That script lower-cases predictions and references, pads each sample's references to three with
"<null>", runs Moses's detokenizer over every line and scores with sacrebleu's default
settings against the three reference streams; RL4LMs reports the score / 100.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from grue_bench.errors import GrueError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import require_aligned
from grue_bench.schema import Output

log = logging.getLogger(__name__)

N_REFERENCES = 3
"""ToTTo's dev and test examples have up to three references; fewer are padded with "<null>"."""


def _detokenized(text: str, detokenizer) -> str:
    return detokenizer.detokenize(text.lower().split())


def totto_bleu(predictions: list[str], references: list[list[str]]) -> float:
    """Corpus BLEU / 100 of lower-cased, detokenized predictions against up to three references."""
    import sacrebleu
    from sacremoses import MosesDetokenizer

    detokenizer = MosesDetokenizer(lang="en")
    padded = [(list(refs) + ["<null>"] * N_REFERENCES)[:N_REFERENCES] for refs in references]
    streams = [[_detokenized(refs[k], detokenizer) for refs in padded] for k in range(N_REFERENCES)]
    hypotheses = [_detokenized(text, detokenizer) for text in predictions]
    return sacrebleu.corpus_bleu(hypotheses, streams).score / 100


class BleuToTTo(Metric):
    """``table_to_text/bleu_overall``, ``bleu_overlap`` and ``bleu_non_overlap`` (corpus scores).

    A sample's subset is its ``meta_info["overlap_subset"]`` (ToTTo's flag: its table was seen in
    training). A subset with no samples in the split gets no key (RL4LMs writes 0 for it).
    """

    outputs: ClassVar[Mapping[str, Output]] = {
        "table_to_text/bleu_overall": Output(display="ToTTo BLEU"),
        "table_to_text/bleu_overlap": Output(display="ToTTo BLEU (tables seen in training)"),
        "table_to_text/bleu_non_overlap": Output(display="ToTTo BLEU (tables not seen)"),
    }

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        require_aligned(generated_texts, reference_texts)
        metas = meta_infos or [{} for _ in generated_texts]
        if any("overlap_subset" not in meta for meta in metas):
            raise GrueError(
                "bleu_totto needs each sample's meta_info['overlap_subset'] (ToTTo's flag)",
                key="bleu_totto",
                fix="use the totto datapool (its samples carry the flag), or the metric bleu",
            )
        scores: MetricScores = {
            "table_to_text/bleu_overall": (None, totto_bleu(generated_texts, reference_texts))
        }
        for key, wanted in (("bleu_overlap", True), ("bleu_non_overlap", False)):
            chosen = [i for i, meta in enumerate(metas) if bool(meta["overlap_subset"]) == wanted]
            if not chosen:
                log.info("bleu_totto: no %s samples in this split: no %s", key[5:], key)
                continue
            subset = totto_bleu([generated_texts[i] for i in chosen], [reference_texts[i] for i in chosen])
            scores[f"table_to_text/{key}"] = (None, subset)
        return scores
