"""Perplexity of the references under a causal LM (RL4LMs's ``causal_perplexity``), with a sliding window.

Which LM: ``model_name`` (a folder or hub id) when set, so that numbers compare across policies; otherwise
the ``model`` passed to ``compute`` (the policy's causal LM, as in RL4LMs). Which tokenizer:
``tokenizer_name`` when set, else ``model.tokenizer`` when the caller attached one to the LM, else the
tokenizer saved with ``model_name``.

As in RL4LMs the references (or, with ``use_text_from_meta_data``, each sample's ``meta_info["reference"]``)
are joined with blank lines into one text and scored in windows of the LM's context length, advancing by
``stride`` tokens (default half the window; a stride not shorter than the window, such as RL4LMs's 512 on a
small LM, is cut to the window minus one, with a log line); every token but the first is
scored exactly once (RL4LMs's loop miscounts window edges), so one window gives exactly ``exp`` of the LM's
mean token loss.
Train splits are skipped by default, as RL4LMs does, because this is slow and the references are the
training targets.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PositiveInt

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.models.hub import resolve_model
from grue_bench.schema import Output

logger = logging.getLogger(__name__)


def _context_length(lm: Any) -> int | None:
    config = lm.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _usable_stride(stride: int | None, window: int) -> int:
    """``stride`` (default half the window), cut to ``window - 1`` so every scored token keeps context.

    RL4LMs configs set ``stride: 512`` for GPT-2's 1024-token window; a small LM's window can be shorter
    than that, and RL4LMs's own loop then scores only the last window of each stride and skips the rest.
    """
    if window < 2:
        raise GrueError(
            f"a window of {window} token leaves no context to score a token with",
            key="causal_perplexity.max_length",
            fix="set max_length >= 2 (or leave it unset for the LM's context length)",
        )
    if stride is None:
        return window // 2
    if stride >= window:
        logger.info(
            "perplexity: stride %d not shorter than the %d-token window: using %d", stride, window, window - 1
        )
        return window - 1
    return stride


def sliding_window_nll(lm: Any, input_ids: Any, window: int, stride: int) -> tuple[float, int]:
    """(sum of token NLLs, tokens scored) of ``input_ids`` (shape 1 x n); needs ``stride`` < ``window``.

    The first window scores its tokens 1.. with whatever context precedes them; each later window moves its
    end on by ``stride`` and scores only the tokens it adds, each with at least ``window - stride`` context.
    """
    import torch

    n = input_ids.size(1)
    total, count = 0.0, 0
    start, end, scored_from = 0, min(window, n), 1
    while scored_from < n:
        chunk = input_ids[:, start:end].to(lm.device)
        first = scored_from - start  # chunk position of the first token to score
        # The vocabulary projection only where a scored token is predicted, those positions named by
        # index: an int slices the hidden states, and on CPU under bf16 autocast the sliced input
        # runs the head as a batched product, 1.6x slower at 513 positions on a Zen 5 (same values).
        keep = torch.arange(first - 1, end - start, device=lm.device)
        with torch.no_grad():
            logits = lm(chunk, logits_to_keep=keep).logits[0, :-1]
        total += float(torch.nn.functional.cross_entropy(logits.float(), chunk[0, first:], reduction="sum"))
        count += end - scored_from
        scored_from, end = end, min(end + stride, n)
        start = max(0, end - window)
    return total, count


class Perplexity(Metric):
    """Corpus perplexity of the references under key ``fluency_metrics/perplexity`` (no per-sample scores)."""

    outputs: ClassVar[Mapping[str, Output]] = {
        "fluency_metrics/perplexity": Output(
            display="Perplexity",
            higher_is_better=False,
            naturalness=True,
            decimals=2,
            description="perplexity of the generations under a reference language model",
        )
    }

    def __init__(
        self,
        model_name: str | None = None,
        tokenizer_name: str | None = None,
        stride: PositiveInt | None = None,
        max_length: Annotated[int, Field(ge=2)] | None = None,
        skip_train_split: bool = True,
        tokenizer_id: str | None = None,
        model_type: Literal["causal"] = "causal",
        use_text_from_meta_data: bool = False,
    ) -> None:
        """``tokenizer_id`` and ``model_type`` are RL4LMs's names (perplexity is for causal LMs only);
        ``use_text_from_meta_data`` (RL4LMs's) scores each sample's ``meta_info["reference"]`` instead of
        its references."""
        tokenizer_name = tokenizer_name or tokenizer_id
        self.model_name = model_name
        self.tokenizer_name = tokenizer_name
        self.stride = stride
        self.max_length = max_length
        self.skip_train_split = skip_train_split
        self.use_text_from_meta_data = use_text_from_meta_data
        self._lm: Any = None
        self._tokenizer: Any = None

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """exp(total NLL / tokens scored) over the blank-line-joined references."""
        if self.skip_train_split and split_name == "train":
            return {}
        lm, tokenizer = self._lm_and_tokenizer(model)
        text = "\n\n".join(self._texts(reference_texts, meta_infos))
        input_ids = tokenizer(text, return_tensors="pt").input_ids
        window = self.max_length or _context_length(lm)
        if window is None:
            raise GrueError(
                "cannot tell the causal LM's context length from its config",
                key="causal_perplexity.max_length",
                fix="set max_length",
            )
        stride = _usable_stride(self.stride, window)
        was_training = lm.training
        lm.eval()  # dropout off while scoring; the policy's mode is restored below
        try:
            total, count = sliding_window_nll(lm, input_ids, window, stride)
        finally:
            lm.train(was_training)
        if count == 0:
            raise GrueError("perplexity needs references of at least two tokens in total")

        return {"fluency_metrics/perplexity": (None, math.exp(total / count))}

    def _texts(self, reference_texts: list[list[str]], meta_infos: list[dict[str, Any]] | None) -> list[str]:
        """Every reference, or each sample's ``meta_info["reference"]`` with ``use_text_from_meta_data``."""
        if not self.use_text_from_meta_data:
            return [ref for refs in reference_texts for ref in refs]
        infos = meta_infos or []
        missing = [i for i, info in enumerate(infos) if "reference" not in info]
        if missing or len(infos) != len(reference_texts):
            raise GrueError(
                f"use_text_from_meta_data is set but samples {missing[:5]} have no meta_info 'reference' "
                f"({len(infos)} meta_infos for {len(reference_texts)} samples)",
                key="causal_perplexity.use_text_from_meta_data",
                fix="give every sample a 'reference' in its meta data, or unset use_text_from_meta_data "
                "to score the references",
            )
        return [info["reference"] for info in infos]

    def needs_policy_model(self) -> bool:
        return self.model_name is None

    def _lm_and_tokenizer(self, model: Any) -> tuple[Any, Any]:
        if self.model_name is not None:
            self._load_named()
            lm = self._lm
        elif model is not None:
            lm = model
        else:
            raise GrueError(
                "causal_perplexity needs a causal LM: none was passed to compute and model_name is unset",
                key="causal_perplexity.model_name",
                fix="set model_name to a causal LM folder (or hub id), or evaluate a policy so its LM "
                "is passed",
            )
        tokenizer = self._tokenizer_for(lm)
        return lm, tokenizer

    def _tokenizer_for(self, lm: Any) -> Any:
        if self._tokenizer is not None:
            return self._tokenizer
        if self.tokenizer_name is not None:
            self._tokenizer = _load_pretrained("AutoTokenizer", self.tokenizer_name, "perplexity tokenizer")
            return self._tokenizer
        attached = getattr(lm, "tokenizer", None)
        if attached is not None:
            return attached
        raise GrueError(
            "causal_perplexity has no tokenizer for the LM it was given",
            key="causal_perplexity.tokenizer_name",
            fix="set tokenizer_name (folder or hub id), or attach the tokenizer to the LM as `lm.tokenizer`",
        )

    def _load_named(self) -> None:
        if self._lm is None:
            assert self.model_name is not None
            self._lm = _load_pretrained("AutoModelForCausalLM", self.model_name, "perplexity LM")
            if self.tokenizer_name is None:
                self._tokenizer = _load_pretrained("AutoTokenizer", self.model_name, "perplexity tokenizer")
            logger.info("perplexity LM: %s", self.model_name)


def _load_pretrained(auto_class: str, name: str, what: str) -> Any:
    """``transformers.<auto_class>.from_pretrained`` on a folder or hub id, failing fast offline."""
    import transformers

    source = resolve_model(name, what=what, offline_fix="or pass a local folder")
    try:
        return getattr(transformers, auto_class).from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise MissingAssetError(
            f"{what}: could not load {name!r}: {exc}",
            fix="pass a folder saved by save_pretrained, or a hub id where the hub is reachable",
        ) from exc
