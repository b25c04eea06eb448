"""SummaC consistency (Laban et al., 2022; RL4LMs ``summaCZS`` and ``summaCConv``).

Both score a summary against its source through an NLI model run on every (source chunk,
summary chunk) pair: the "image" holds P(entailment), P(contradiction) and P(neutral) per pair.
- SummaC-ZS: per summary chunk, reduce over source chunks with ``op1`` (max), take entailment
  minus contradiction (``use_ent``/``use_con`` pick one of them), then reduce over the summary's
  chunks with ``op2`` (mean).
- SummaC-Conv: per summary chunk, a histogram of each label's probabilities over the source
  chunks goes through a trained linear layer; the chunks' outputs are aggregated and a final
  trained layer gives P(consistent). Its two layers must be trained weights (``start_file``).

The NLI models are hub models (no offline copy exists); offline they fail with a message naming
the model, and the offline profiles leave these metrics out of a config's suite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

import numpy as np
from pydantic import Field, PositiveInt

from grue_bench.classifiers.hub import load_sequence_classifier
from grue_bench.errors import MissingAssetError, Problem
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.models.hub import resolve_model
from grue_bench.schema import ArgProblems, Device, Output, text_check


@dataclass(frozen=True)
class NLIModel:
    card: str
    entailment: int
    contradiction: int

    @property
    def neutral(self) -> int:
        return ({0, 1, 2} - {self.entailment, self.contradiction}).pop()


NLI_MODELS = {
    "snli-base": NLIModel("boychaboy/SNLI_roberta-base", 0, 2),
    "snli-large": NLIModel("boychaboy/SNLI_roberta-large", 0, 2),
    "mnli-base": NLIModel("microsoft/deberta-base-mnli", 2, 0),
    "mnli": NLIModel("roberta-large-mnli", 2, 0),
    "anli": NLIModel("ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli", 0, 2),
    "vitc-base": NLIModel("tals/albert-base-vitaminc-mnli", 0, 1),
    "vitc": NLIModel("tals/albert-xlarge-vitaminc-mnli", 0, 1),
    "vitc-only": NLIModel("tals/albert-xlarge-vitaminc", 0, 1),
}
"""SummaC's NLI models: hub card and the label index of entailment and contradiction."""

NLIModelName = Literal[
    "snli-base", "snli-large", "mnli-base", "mnli", "anli", "vitc-base", "vitc", "vitc-only"
]
"""The names of ``NLI_MODELS``."""
Granularity = Literal["paragraph", "sentence", "document", "2sents", "mixed"]


def _is_granularity(value: str) -> bool:
    grans = value.split("-")
    return len(grans) <= 2 and all(g in get_args(Granularity) for g in grans)


ChunkGranularity = Annotated[
    str,
    text_check(
        _is_granularity,
        lambda value: f"unknown granularity {value!r}",
        fix=f"use one of {', '.join(get_args(Granularity))}, or two joined by '-' (source-summary)",
    ),
]
"""How source and summary are cut into chunks: one ``Granularity`` for both, or ``source-summary``."""

Bins = Annotated[
    str,
    text_check(
        lambda value: value == "percentile" or re.fullmatch(r"even0*[1-9]\d*", value),
        lambda value: f"unknown bins {value!r}",
        fix="use evenN (N equal bins, N >= 1: even50) or percentile",
    ),
]
"""SummaC-Conv's histogram bins: ``evenN`` or ``percentile``."""
MAX_INPUT_TOKENS = 500
"""SummaC truncates each (source chunk, summary chunk) pair to this many tokens, source first."""
MIN_CHUNK_CHARS = 10
"""SummaC drops chunks of 10 characters or fewer."""
PAIRS_PER_BATCH = 20


def _sentences(text: str) -> list[str]:
    import nltk

    try:
        return nltk.tokenize.sent_tokenize(text)
    except LookupError as exc:
        raise MissingAssetError(
            "SummaC splits sentences with nltk's punkt model, which is not installed",
            key="nltk punkt_tab",
            fix="run `python -m nltk.downloader punkt_tab` on a networked machine, or use "
            "granularity: paragraph or document",
        ) from exc


def split_text(text: str, granularity: str) -> list[str]:
    """SummaC's chunks of ``text``; chunks of 10 characters or fewer are dropped."""
    if granularity == "document":
        return [text]
    if granularity == "paragraph":
        parts = text.split("\n\n") if "\n\n" in text else text.split("\n")
        return [p.strip() for p in parts if len(p.strip()) > MIN_CHUNK_CHARS]
    sentences = [s for s in _sentences(text) if len(s) > MIN_CHUNK_CHARS]
    if granularity == "sentence":
        return sentences
    if granularity == "2sents":
        return [" ".join(sentences[i : i + 2]) for i in range(len(sentences))]
    return sentences + split_text(text, "paragraph")  # mixed


class NLIImager:
    """The [3, source chunks, summary chunks] probabilities (entailment, contradiction, neutral)."""

    def __init__(
        self,
        model_name: NLIModelName = "mnli",
        granularity: ChunkGranularity = "paragraph",
        max_doc_sents: int = 100,
        model_path: str | None = None,
        device: str | None = None,
    ) -> None:
        import torch

        grans = granularity.split("-")
        self.source_granularity, self.summary_granularity = grans[0], grans[-1]
        self.labels = NLI_MODELS[model_name]
        self.max_doc_sents = max_doc_sents
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model, self.tokenizer = load_sequence_classifier(
            model_path or self.labels.card,
            what="SummaC NLI model",
            offline_fix="or leave the SummaC metrics out (the offline profiles do)",
        )
        self.model.to(self.device)

    def image(self, source: str, summary: str) -> np.ndarray:
        import torch

        sources = split_text(source, self.source_granularity)[: self.max_doc_sents]
        summaries = split_text(summary, self.summary_granularity)
        if not sources or not summaries:
            return np.zeros((3, 1, 1))
        pairs = [(i, j) for i in range(len(sources)) for j in range(len(summaries))]
        image = np.zeros((3, len(sources), len(summaries)))
        order = (self.labels.entailment, self.labels.contradiction, self.labels.neutral)
        for start in range(0, len(pairs), PAIRS_PER_BATCH):
            batch = pairs[start : start + PAIRS_PER_BATCH]
            encoded = self.tokenizer(
                [sources[i] for i, _ in batch],
                [summaries[j] for _, j in batch],
                padding=True,
                truncation="only_first",
                max_length=MAX_INPUT_TOKENS,
                return_tensors="pt",
            ).to(self.device)
            with torch.no_grad():
                probs = torch.softmax(self.model(**encoded).logits.float(), dim=-1).cpu().numpy()
            for (i, j), row in zip(batch, probs, strict=True):
                image[:, i, j] = row[list(order)]
        return image


_REDUCE = {"max": np.max, "mean": np.mean, "min": np.min}


class SummaCZS(Metric):
    """Zero-shot SummaC per sample (prompt = source, generation = summary), under
    ``consistency/summaczs``."""

    outputs: ClassVar[Mapping[str, Output]] = {"consistency/summaczs": Output(display="SummaC-ZS")}

    def __init__(
        self,
        model_name: NLIModelName = "mnli",
        granularity: ChunkGranularity = "paragraph",
        op1: Literal["max", "mean", "min"] = "max",
        op2: Literal["max", "mean", "min"] = "mean",
        use_ent: bool = True,
        use_con: bool = True,
        max_doc_sents: PositiveInt = 100,
        model_path: str | None = None,
        device: Device | None = None,
    ) -> None:
        self.imager = NLIImager(model_name, granularity, max_doc_sents, model_path, device)
        self.op1, self.op2, self.use_ent, self.use_con = _REDUCE[op1], _REDUCE[op2], use_ent, use_con

    @staticmethod
    def check_args(args: Any) -> None:
        if not (args.use_ent or args.use_con):
            raise ArgProblems(Problem("use_ent and use_con are both false", key="use_ent", fix="set one"))

    @classmethod
    def missing_asset(cls, **args: Any) -> MissingAssetError | None:
        return _missing_nli_model(args)

    def score_one(self, source: str, summary: str) -> float:
        image = self.imager.image(source, summary)
        entailed, contradicted = self.op1(image[0], axis=0), self.op1(image[1], axis=0)
        if self.use_ent and self.use_con:
            scores = entailed - contradicted
        else:
            scores = entailed if self.use_ent else 1.0 - contradicted
        return float(self.op2(scores))

    def compute(
        self, prompt_texts, generated_texts, reference_texts, meta_infos=None, model=None, split_name=None
    ) -> MetricScores:
        scores = [self.score_one(s, g) for s, g in zip(prompt_texts, generated_texts, strict=True)]
        return {"consistency/summaczs": (scores, float(np.mean(scores)) if scores else 0.0)}


class SummaCConv(Metric):
    """SummaC-Conv per sample under ``consistency/summacconv``: P(consistent) from the trained
    histogram layers in ``start_file`` (SummaC's released ``summac_conv_*.bin`` state dict, keys
    ``mlp.*`` and ``layer_final.*``)."""

    outputs: ClassVar[Mapping[str, Output]] = {"consistency/summacconv": Output(display="SummaC-Conv")}

    N_ROWS = 10
    """Summary chunks scored (SummaC's fixed histogram rows)."""

    def __init__(
        self,
        start_file: str | None = None,
        models: Annotated[Sequence[NLIModelName], Field(min_length=1)] = ("mnli", "anli", "vitc"),
        bins: Bins = "even50",
        granularity: ChunkGranularity = "sentence",
        nli_labels: Literal["e", "c", "n", "ec", "en", "cn", "ecn"] = "e",
        agg: Literal["mean", "min", "max", "all"] = "mean",
        norm_histo: bool = False,
        max_doc_sents: PositiveInt = 100,
        device: Device | None = None,
    ) -> None:
        import torch

        if start_file is None or not Path(start_file).is_file():
            raise MissingAssetError(
                "SummaC-Conv needs its trained layers: without them (RL4LMs's default) it scores "
                "with randomly initialised ones",
                key="summaCConv.start_file",
                fix="download SummaC's summac_conv_vitc_sent_perc_e.bin (github.com/tingofurro/summac) "
                "and set start_file to its path",
            )
        self.imagers = [NLIImager(name, granularity, max_doc_sents, None, device) for name in models]
        self.bins = self._bins(bins)
        self.nli_labels, self.agg, self.norm_histo = nli_labels, agg, norm_histo
        size = len(models) * len(nli_labels) * (len(self.bins) - 1) + (2 if norm_histo else 0)
        self.mlp = torch.nn.Linear(size, 1)
        self.layer_final = torch.nn.Linear(3, 2)
        state = torch.load(start_file, map_location="cpu", weights_only=True)
        self.mlp.load_state_dict({k[4:]: v for k, v in state.items() if k.startswith("mlp.")})
        self.layer_final.load_state_dict(
            {k[12:]: v for k, v in state.items() if k.startswith("layer_final.")}
        )

    @staticmethod
    def _bins(bins: str) -> list[float]:
        if bins == "percentile":
            return [0.0, 0.01, 0.02, 0.03, 0.04, 0.07, 0.13, 0.37, 0.90, 0.91, 0.92, 0.93, 0.94, 0.95,
                    0.955, 0.96, 0.965, 0.97, 0.975, 0.98, 0.985, 0.99, 0.995, 1.0]  # fmt: skip
        n = int(bins[4:])  # evenN
        return [k / n for k in range(n)] + [1.0]

    @classmethod
    def missing_asset(cls, **args: Any) -> MissingAssetError | None:
        start = args.get("start_file")
        if start is None or not Path(start).is_file():
            return MissingAssetError(
                "SummaC-Conv needs its trained layers (start_file)",
                key="summaCConv.start_file",
                fix="download SummaC's summac_conv_vitc_sent_perc_e.bin and set start_file",
            )
        for name in args.get("models", ("mnli", "anli", "vitc")):
            missing = _missing_nli_model({"model_name": name})
            if missing is not None:
                return missing
        return None

    def histogram(self, image: np.ndarray) -> np.ndarray:
        """[N_ROWS, features]: per summary chunk, each kept label's histogram over source chunks."""
        depth, n_source, n_summary = image.shape
        rows = []
        for j in range(n_summary):
            kept = [d for d in range(depth) if "ecn"[d % 3] in self.nli_labels]
            parts = [
                np.histogram(image[d, :, j], range=(0, 1), bins=self.bins, density=self.norm_histo)[0]
                for d in kept
            ]
            if self.norm_histo:
                parts = [np.array([n_source, n_summary]), *parts]
            rows.append(np.concatenate(parts))
        width = self.mlp.in_features
        rows = (rows + [np.zeros(width)] * self.N_ROWS)[: self.N_ROWS]
        return np.array(rows, dtype=np.float32)

    def score_one(self, source: str, summary: str) -> float:
        import torch

        image = np.concatenate([imager.image(source, summary) for imager in self.imagers], axis=0)
        histogram = torch.from_numpy(self.histogram(image))
        used = int((histogram.sum(-1) != 0).sum())
        with torch.no_grad():
            outputs = self.mlp(histogram)[:used, 0]
            if used == 0:
                features = torch.zeros(3)
            elif self.agg == "all":
                features = torch.stack([outputs.min(), outputs.mean(), outputs.max()])
            else:
                features = getattr(outputs, self.agg)().repeat(3)
            return float(torch.softmax(self.layer_final(features), dim=-1)[1])

    def compute(
        self, prompt_texts, generated_texts, reference_texts, meta_infos=None, model=None, split_name=None
    ) -> MetricScores:
        scores = [self.score_one(s, g) for s, g in zip(prompt_texts, generated_texts, strict=True)]
        return {"consistency/summacconv": (scores, float(np.mean(scores)) if scores else 0.0)}


def _missing_nli_model(args: dict[str, Any]) -> MissingAssetError | None:
    """The NLI model a SummaC metric would load, if it is neither local nor on a reachable hub (an
    unknown model name is the args check's to report)."""

    name = args.get("model_name", "mnli")
    if not args.get("model_path") and name not in NLI_MODELS:
        return None
    try:
        resolve_model(args.get("model_path") or NLI_MODELS[name].card, what="SummaC NLI model",
                      offline_fix="or leave the SummaC metrics out (the offline profiles do)")  # fmt: skip
    except MissingAssetError as missing:
        return missing
    return None
