"""N-gram overlap metrics: ROUGE (rouge-score), ROUGE-L max (py-rouge's), BLEU (nltk), SacreBLEU, chrF and
TER (sacrebleu).

Every metric takes several references per sample. Corpus scores are exactly what the
underlying package reports for the same inputs, so they can be checked against direct calls;
sacrebleu's scores are divided by 100, as RL4LMs reports them (its 0-1 scale; TER can exceed 1).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, get_args

from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

from grue_bench.errors import GrueError, Problem
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.pyrouge import LengthLimitType, PyRougeL
from grue_bench.schema import ArgProblems, CommaTolerantBool, Output, UnitInterval

RougeType = Literal["rouge1", "rouge2", "rougeL", "rougeLsum"]
ROUGE_TYPES = get_args(RougeType)

# nltk's punkt sentence model is not available offline, so a period/!/? followed by whitespace
# ends a sentence (rougeLsum and METEOR's tokenizer need sentences).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def require_aligned(generated_texts: Sequence[str], reference_texts: Sequence[Sequence[str]]) -> None:
    """Raise if generations and references differ in number or a sample has no reference."""
    if len(generated_texts) != len(reference_texts):
        raise GrueError(
            f"{len(generated_texts)} generated texts but {len(reference_texts)} reference lists",
            fix="pass one list of references per generated text",
        )
    empty = [i for i, refs in enumerate(reference_texts) if not refs]
    if empty:
        raise GrueError(
            f"samples {empty[:5]} have no reference text",
            fix="give every sample at least one reference (the task's `references` field)",
        )


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; 0.0 for no values."""
    return float(sum(values) / len(values)) if values else 0.0


def split_into_sentences(text: str) -> list[str]:
    """Sentences of ``text``, split after . ! or ? followed by whitespace."""
    return [sentence for sentence in _SENTENCE_END.split(text.strip()) if sentence]


def newline_sentences(text: str) -> str:
    """``text`` with one sentence per line, as rougeLsum expects; kept as is if it has newlines."""
    return text if "\n" in text else "\n".join(split_into_sentences(text))


class Rouge(Metric):
    """ROUGE-1/2/L/Lsum F-measure; per sample the first (or best) reference, corpus the mean over samples."""

    outputs: ClassVar[Mapping[str, Output]] = {
        f"lexical/rouge_{rouge_type}": Output(display=f"ROUGE-{rouge_type[5:]}") for rouge_type in ROUGE_TYPES
    }

    def __init__(self, use_stemmer: bool = True, use_single_ref: bool = True, split_sentences: bool = True):
        """``use_single_ref`` (RL4LMs's default, True) scores against each sample's first reference only;
        False takes the best of all references (RL4LMs's NarrativeQA configs set it).
        ``split_sentences`` puts one sentence per line for rougeLsum (texts with newlines are kept)."""
        from rouge_score import rouge_scorer

        self._scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)
        self._use_single_ref = use_single_ref
        self._split_sentences = split_sentences

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """ROUGE F-measures under ``lexical/rouge_<type>``."""
        require_aligned(generated_texts, reference_texts)
        per_type: dict[str, list[float]] = {rouge_type: [] for rouge_type in ROUGE_TYPES}
        for prediction, refs in zip(generated_texts, reference_texts, strict=True):
            targets = refs[:1] if self._use_single_ref else list(refs)
            if self._split_sentences:
                # Newlines only matter to rougeLsum: the tokenizer drops them for the others.
                prediction, targets = newline_sentences(prediction), [newline_sentences(t) for t in targets]
            scores = self._scorer.score_multi(targets, prediction)
            for rouge_type in ROUGE_TYPES:
                per_type[rouge_type].append(float(scores[rouge_type].fmeasure))
        return {f"lexical/rouge_{t}": (values, mean(values)) for t, values in per_type.items()}


class RougeLMax(Metric):
    """py-rouge's ROUGE-L F against the best-matching reference, averaged over samples (RL4LMs's metric).

    The arguments are those RL4LMs passes to ``rouge.Rouge(metrics=["rouge-l"], ...)``, with py-rouge's
    defaults and meaning (see ``grue_bench.metrics.pyrouge``). As in RL4LMs each reference is scored on its
    own, so py-rouge's multi-reference aggregation (``apply_avg``, ``apply_best``) never sees more than
    one reference and does not change the score; with both False py-rouge returns unaggregated lists, on
    which RL4LMs fails, so that is refused. ``max_n`` sets ROUGE-N's n, which py-rouge ignores when
    only ROUGE-L is asked for: it is accepted so RL4LMs configs run, and changes nothing, as in RL4LMs.
    """

    outputs: ClassVar[Mapping[str, Output]] = {
        "lexical/rouge_l_max": Output(display="ROUGE-L (max over references)")
    }

    def __init__(
        self,
        max_n: PositiveInt | None = None,
        limit_length: bool = True,
        length_limit: NonNegativeInt = 665,
        length_limit_type: LengthLimitType = "bytes",
        apply_avg: CommaTolerantBool = True,
        apply_best: CommaTolerantBool = False,
        alpha: UnitInterval = 0.5,
        weight_factor: PositiveFloat = 1.0,
        stemming: bool = True,
    ):
        self._rouge_l = PyRougeL(
            limit_length, length_limit, length_limit_type, stemming, alpha, weight_factor
        )

    @staticmethod
    def check_args(args: Any) -> None:
        if not (args.apply_avg or args.apply_best):
            raise ArgProblems(
                Problem(
                    "apply_avg and apply_best are both false: py-rouge then returns one score per reference "
                    "instead of one number, which RL4LMs's rouge_l_max cannot use",
                    key="apply_avg",
                    fix="set apply_avg: true (py-rouge's default) or apply_best: true; with one reference "
                    "per call both give the same score",
                )
            )

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Max-over-references ROUGE-L under ``lexical/rouge_l_max``."""
        require_aligned(generated_texts, reference_texts)
        values = [
            max(self._rouge_l.f_score(prediction, ref) for ref in refs)
            for prediction, refs in zip(generated_texts, reference_texts, strict=True)
        ]
        return {"lexical/rouge_l_max": (values, mean(values))}


class Bleu(Metric):
    """BLEU-4 on whitespace tokens with nltk, on a 0-1 scale (RL4LMs's ``lexical/bleu``).

    Corpus: nltk ``corpus_bleu``, unsmoothed (as HF's ``bleu`` that RL4LMs used; nltk takes the
    reference length closest to each hypothesis). Per sample: ``sentence_bleu`` with smoothing
    method 1, since unsmoothed sentence BLEU is 0 whenever a short text lacks a 4-gram match.
    """

    outputs: ClassVar[Mapping[str, Output]] = {"lexical/bleu": Output(display="BLEU")}

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Corpus and sentence BLEU under ``lexical/bleu``."""
        from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

        require_aligned(generated_texts, reference_texts)
        hypotheses = [text.split() for text in generated_texts]
        references = [[ref.split() for ref in refs] for refs in reference_texts]
        smoothing = SmoothingFunction().method1
        with warnings.catch_warnings():
            # nltk warns on every zero n-gram count; a score of 0 then is the intended result.
            warnings.filterwarnings("ignore", message=r"\s*The hypothesis contains 0 counts")
            per_sample = [
                float(sentence_bleu(refs, hyp, smoothing_function=smoothing))
                for hyp, refs in zip(hypotheses, references, strict=True)
            ]
            corpus = float(corpus_bleu(references, hypotheses))
        return {"lexical/bleu": (per_sample, corpus)}


def reference_streams(reference_texts: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """sacrebleu's layout: one stream per reference position, ``None`` where a sample has fewer."""
    width = max((len(refs) for refs in reference_texts), default=0)
    return [[refs[i] if i < len(refs) else None for refs in reference_texts] for i in range(width)]


SACREBLEU_SCALE = 100.0
"""sacrebleu scores on 0-100; RL4LMs reports them / 100, as we do (``lexical/sacrebleu`` 0.3 = BLEU 30)."""


class _SacreMetric(Metric):
    """A sacrebleu metric class: corpus and sentence scores, sacrebleu's score / 100 (RL4LMs's 0-1 scale)."""

    metric_name: ClassVar[str]  # class name in sacrebleu.metrics
    sentence_overrides: ClassVar[dict[str, Any]] = {}

    def __init__(self, **args: Any):
        """``args`` go to the sacrebleu metric class unchanged: each subclass declares them, with
        sacrebleu's names and defaults."""
        import sacrebleu.metrics

        cls = getattr(sacrebleu.metrics, self.metric_name)
        self._corpus_metric = cls(**args)
        self._sentence_metric = cls(**{**args, **self.sentence_overrides})

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Corpus and per-sample sacrebleu scores / 100 under this metric's key."""
        require_aligned(generated_texts, reference_texts)
        corpus = self._corpus_metric.corpus_score(generated_texts, reference_streams(reference_texts))
        per_sample = [
            float(self._sentence_metric.sentence_score(hyp, list(refs)).score) / SACREBLEU_SCALE
            for hyp, refs in zip(generated_texts, reference_texts, strict=True)
        ]
        return {self.key: (per_sample, float(corpus.score) / SACREBLEU_SCALE)}

    def leave_one_out(
        self, generated_texts: list[str], reference_texts: list[list[str]]
    ) -> dict[str, list[float]] | None:
        """The corpus score without each sample, from sacrebleu's per-sentence statistics (the
        sums the corpus score is computed from)."""
        metric = self._corpus_metric
        rows = metric._extract_corpus_statistics(generated_texts, reference_streams(reference_texts))
        totals = [sum(column) for column in zip(*rows, strict=True)]
        return {
            self.key: [
                float(
                    metric._compute_score_from_stats([t - v for t, v in zip(totals, row, strict=True)]).score
                )
                / SACREBLEU_SCALE
                for row in rows
            ]
        }


SacreTokenizer = Literal[
    "none", "zh", "13a", "intl", "char", "ja-mecab", "ko-mecab", "spm", "flores101", "flores200", "spBLEU-1K"
]
"""sacrebleu 2's BLEU tokenizers (unset: 13a, or the target language's)."""


class SacreBleu(_SacreMetric):
    """sacrebleu BLEU / 100 (0-1); sentence scores use effective order, as sacrebleu recommends."""

    outputs: ClassVar[Mapping[str, Output]] = {"lexical/sacrebleu": Output(display="SacreBLEU")}

    metric_name = "BLEU"
    sentence_overrides: ClassVar[dict[str, Any]] = {"effective_order": True}

    def __init__(
        self,
        lowercase: bool = False,
        force: bool = False,
        tokenize: SacreTokenizer | None = None,
        smooth_method: Literal["none", "floor", "add-k", "exp"] = "exp",
        smooth_value: NonNegativeFloat | None = None,
        max_ngram_order: PositiveInt = 4,
        effective_order: bool = False,
        trg_lang: str = "",
    ):
        super().__init__(
            lowercase=lowercase,
            force=force,
            tokenize=tokenize,
            smooth_method=smooth_method,
            smooth_value=smooth_value,
            max_ngram_order=max_ngram_order,
            effective_order=effective_order,
            trg_lang=trg_lang,
        )


class ChrF(_SacreMetric):
    """sacrebleu chrF / 100 (0-1); ``word_order: 2`` gives chrF++, ``beta: 0`` precision alone."""

    outputs: ClassVar[Mapping[str, Output]] = {"lexical/chrf": Output(display="chrF")}

    metric_name = "CHRF"

    def __init__(
        self,
        char_order: PositiveInt = 6,
        word_order: NonNegativeInt = 0,
        beta: NonNegativeInt = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
    ):
        super().__init__(
            char_order=char_order,
            word_order=word_order,
            beta=beta,
            lowercase=lowercase,
            whitespace=whitespace,
            eps_smoothing=eps_smoothing,
        )


class Ter(_SacreMetric):
    """sacrebleu TER / 100 (0 and up, can exceed 1; lower is better)."""

    outputs: ClassVar[Mapping[str, Output]] = {
        "lexical/ter": Output(display="TER", higher_is_better=False, description="translation edit rate")
    }

    metric_name = "TER"

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
    ):
        super().__init__(
            normalized=normalized,
            no_punct=no_punct,
            asian_support=asian_support,
            case_sensitive=case_sensitive,
        )
