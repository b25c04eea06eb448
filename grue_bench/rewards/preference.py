"""RL4LMs ``common_gen_preference_model``: AI2's T5-11B CommonGen preference model as a reward."""

from __future__ import annotations

import logging
import shutil
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import NonNegativeFloat, PositiveInt

from grue_bench.classifiers.offline import COMMONGEN_PLAUSIBILITY, offline_classifier
from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.models.hub import hub_offline, resolve_model
from grue_bench.paths import cache_dir
from grue_bench.rewards.base import RewardFunction
from grue_bench.rewards.metric_reward import MetricReward
from grue_bench.schema import Device

logger = logging.getLogger(__name__)

CHECKPOINT_URLS = {
    "11b": "https://storage.googleapis.com/ai2-jack-public/rl4lms_preference_models/t5-11b~commongen_prefs.pt"
}
"""RL4LMs's preference-model weights per ``model_type``: a state dict over hub model ``t5-<model_type>``."""
_WHAT = "common_gen_preference_model"


def checkpoint_file(model_type: str) -> Path:
    """Where the downloaded weights for ``model_type`` are kept (in the GRUE Bench cache)."""

    return cache_dir() / "common_gen_preference" / Path(CHECKPOINT_URLS[model_type]).name


def _fix(model_type: str) -> str:
    return (
        f"run once with network to download {CHECKPOINT_URLS[model_type]} into {checkpoint_file(model_type)} "
        f"(and hub model t5-{model_type} into the Hugging Face cache), or set reward_fn.args.model_path to "
        "that .pt file or to a folder holding a saved seq2seq preference model and its tokenizer. The "
        "offline profiles replace it by an offline stand-in (model_type: offline)"
    )


def _download_checkpoint(model_type: str) -> Path:
    """The cached weights for ``model_type``, downloaded first if need be; MissingAssetError offline."""

    path = checkpoint_file(model_type)
    if path.is_file():
        return path
    url = CHECKPOINT_URLS[model_type]
    if hub_offline():
        raise MissingAssetError(
            f"{_WHAT}: the preference-model weights {path.name} are not in {path.parent} and the "
            "network is off (HF_HUB_OFFLINE, or the Hugging Face hub cannot be reached)",
            key="reward_fn.args.model_path",
            fix=_fix(model_type),
        )
    logger.info("%s: downloading %s (about 45 GB)", _WHAT, url)
    partial = path.with_suffix(".part")
    try:
        with urllib.request.urlopen(url, timeout=30) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:
        raise MissingAssetError(
            f"{_WHAT}: could not download the preference-model weights from {url}: {exc}",
            key="reward_fn.args.model_path",
            fix=_fix(model_type),
        ) from exc
    partial.replace(path)
    return path


@lru_cache(maxsize=1)
def load_preference_model(model_type: str, model_path: str | None, device: str):  # -> (model, tokenizer)
    """RL4LMs's preference model (``t5-<model_type>`` with the downloaded weights), or ``model_path``:
    a folder with a saved seq2seq model and tokenizer, or a .pt state dict over ``t5-<model_type>``."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    local = Path(model_path).expanduser() if model_path else None
    if local is not None and not local.exists():
        raise MissingAssetError(
            f"{_WHAT}: model_path {model_path!r} does not exist",
            key="reward_fn.args.model_path",
            fix=_fix(model_type),
        )
    if local is not None and local.is_dir():
        tokenizer = AutoTokenizer.from_pretrained(local)
        model = AutoModelForSeq2SeqLM.from_pretrained(local)
    else:
        import torch

        weights = local or _download_checkpoint(model_type)
        base = resolve_model(f"t5-{model_type}", what=f"{_WHAT} base model", offline_fix=_fix(model_type))
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = AutoModelForSeq2SeqLM.from_pretrained(base)
        # RL4LMs's weights were saved with the embeddings cut to the tokenizer's size.
        model.resize_token_embeddings(len(tokenizer))
        state = torch.load(weights, map_location="cpu", weights_only=True)
        model.load_state_dict(state.get("model_state_dict", state))
    model.eval()
    return model.to(device), tokenizer


class CommonGenPreference(RewardFunction):
    """RL4LMs ``common_gen_preference_model``:
    meteor_coeff * METEOR + P(good | generation) / (1 + concept_penalty_coeff * missing concepts).

    P(good) is RL4LMs's: the model reads the generation alone (not the prompt), and the first decoder
    step's logits of the first tokens of "good" and "bad" are softmaxed between the two. A concept
    (``meta_info["concepts"]``) is missing when it is not a substring of the lower-cased generation.
    ``model_type`` picks RL4LMs's weights (only "11b" exists); ``model_path`` (a GRUE extension) gives
    them, or another preference model, locally. ``model_type: offline`` (what the offline profiles
    set) takes P(good) from a plausibility classifier trained on the shipped CommonGen references
    against their own words shuffled (``classifiers.offline.COMMONGEN_PLAUSIBILITY``): a stand-in
    that prefers fluent, human-like sentences, not AI2's model. ``device`` unset means CUDA when
    available.
    """

    classifier = None

    def __init__(
        self,
        model_type: Literal["11b", "offline"] = "11b",
        device: Device | None = None,
        batch_size: PositiveInt = 1,
        concept_penalty_coeff: NonNegativeFloat = 0.0,
        meteor_coeff: NonNegativeFloat = 0.0,
        model_path: str | None = None,
    ) -> None:
        import torch

        self.batch_size = batch_size
        self.concept_penalty_coeff = concept_penalty_coeff
        self.meteor_coeff = meteor_coeff
        self.meteor = None
        if meteor_coeff:
            self.meteor = MetricReward("meteor", ["lexical/meteor"])
        if model_type == "offline":
            self.classifier = offline_classifier(COMMONGEN_PLAUSIBILITY)
            return
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model, self.tokenizer = load_preference_model(model_type, model_path, self.device)
        self.good_id, self.bad_id = (self.tokenizer(word).input_ids[0] for word in ("good", "bad"))
        if self.good_id == self.bad_id:
            raise GrueError(
                f"{_WHAT}: the model's tokenizer starts 'good' and 'bad' with the same token, so it "
                "cannot tell them apart",
                key="reward_fn.args.model_path",
                fix="use a preference model trained to answer 'good' or 'bad'",
            )

    def preference(self, texts: list[str]) -> list[float]:
        """P(good) of each text, ``batch_size`` texts at a time."""
        import torch

        if self.classifier is not None:
            good = self.classifier.labels.index(1)
            return [probabilities[good] for probabilities in self.classifier.predict_proba(texts)]

        start_id = self.model.config.decoder_start_token_id
        scores: list[float] = []
        for begin in range(0, len(texts), self.batch_size):
            chunk = texts[begin : begin + self.batch_size]
            encoded = self.tokenizer(chunk, return_tensors="pt", truncation=True, padding=True)
            encoded = encoded.to(self.device)
            decoder_input = torch.full((len(chunk), 1), start_id, device=self.device)
            with torch.no_grad():
                logits = self.model(**encoded, decoder_input_ids=decoder_input).logits[:, 0]
            # exp(good) / (exp(good) + exp(bad))
            scores.extend(torch.sigmoid(logits[:, self.good_id] - logits[:, self.bad_id]).tolist())
        return scores

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        rewards = [
            p / (1 + self.concept_penalty_coeff * missing)
            for p, missing in zip(
                self.preference(list(generations)), self._missing(generations, meta_infos), strict=True
            )
        ]
        if self.meteor is not None:
            meteor = self.meteor.batch(prompts, generations, references, meta_infos)
            rewards = [r + self.meteor_coeff * m for r, m in zip(rewards, meteor, strict=True)]
        return rewards

    def _missing(self, generations: list[str], meta_infos: list[dict[str, Any]]) -> list[int]:
        """Per generation, how many of its concepts it lacks (0 when they carry no weight)."""
        if not self.concept_penalty_coeff:
            return [0] * len(generations)
        counts = []
        for text, meta in zip(generations, meta_infos, strict=True):
            if "concepts" not in meta:
                raise GrueError(
                    f"{_WHAT}: concept_penalty_coeff needs each sample's concepts, but meta_info has "
                    f"only {sorted(meta)}",
                    key="reward_fn.args.concept_penalty_coeff",
                    fix="use the commongen datapool or task (it puts the concepts in meta_info), or set "
                    "concept_penalty_coeff to 0",
                )
            counts.append(sum(concept not in text.lower() for concept in meta["concepts"]))
        return counts
