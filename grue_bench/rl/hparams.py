"""Hyperparameters of every algorithm and policy, as strict typed models.

These are light (no torch) so that configs validate fast. Field names follow RL4LMs's
``alg.args`` / ``alg.policy.args`` (themselves from stable-baselines3), so RL4LMs YAML files
load unchanged. The registry maps an algorithm id to its class, which carries these as ``Args``.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    PydanticSchemaGenerationError,
    TypeAdapter,
    create_model,
    field_validator,
    model_validator,
)

from grue_bench.errors import Problem
from grue_bench.schema import ArgProblems, Strict


def one_precision(bf16: bool, fp16: bool) -> None:
    """At most one half precision is asked for."""
    if bf16 and fp16:
        raise ArgProblems(Problem("bf16 and fp16 are both true", key="fp16", fix="set one, or neither: fp32"))


class PostProcessorRef(Strict):
    """A registered post-processor of generated texts, named as RL4LMs names it (``{id: ...}``)."""

    id: str


SAMPLED_SETTINGS = frozenset(
    {"do_sample", "temperature", "top_k", "top_p", "min_length", "min_new_tokens", "max_new_tokens"}
)
"""The generation settings GRUE Bench's own sampler implements (with ``do_sample`` true); others
(beams, penalties) go to ``generate()``."""


class GenerationKwargs(Strict):
    """Keyword arguments for ``generate()`` (the common Hugging Face ones; unknown keys are errors)."""

    do_sample: bool | None = None
    top_k: int | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    typical_p: float | None = Field(None, gt=0, le=1)
    temperature: float | None = Field(None, gt=0)
    min_length: int | None = Field(None, ge=0)
    max_length: int | None = Field(None, ge=1)
    min_new_tokens: int | None = Field(None, ge=0)
    max_new_tokens: int | None = Field(None, ge=1)
    num_beams: int | None = Field(None, ge=1)
    num_return_sequences: int | None = Field(None, ge=1)
    repetition_penalty: float | None = Field(None, gt=0)
    length_penalty: float | None = None
    no_repeat_ngram_size: int | None = Field(None, ge=0)
    early_stopping: bool | None = None
    post_processing_fn: PostProcessorRef | None = None
    """Applied to every generated text before evaluation metrics score it (RL4LMs's supervised
    ``alg.generation_kwargs.post_processing_fn``, e.g. ``three_sentence_summary``); not a
    ``generate()`` argument."""

    def as_kwargs(self) -> dict[str, Any]:
        """The kwargs that were set, ready for ``generate()``."""
        return self.model_dump(exclude_none=True, exclude={"post_processing_fn"})


class AlgArgs(Strict):
    """Arguments shared by every on-policy algorithm."""

    needs_policy: ClassVar[bool] = True
    masked_sampling: ClassVar[bool] = False

    n_steps: PositiveInt = 512
    """Token transitions per env in a rollout: a rollout holds ``env.n_envs x n_steps`` (RL4LMs's
    meaning); GRPO and RLOO count episodes instead."""
    batch_size: PositiveInt = 64
    """Transitions per minibatch of the update, drawn across the rollout (GRPO, RLOO: episodes)."""
    minibatch_by: Literal["transitions", "episodes"] = "transitions"
    """How a minibatch is drawn: ``transitions`` at random across the rollout (RL4LMs's and
    stable-baselines3's), or whole ``episodes`` at random until it holds ``batch_size``
    transitions (TRL's unit). A minibatch forwards every row it draws from: random transitions
    touch nearly every row of a rollout, so each epoch forwards the rollout once per minibatch;
    whole episodes forward it once. GRPO and RLOO always take whole episodes."""
    micro_batch_size: PositiveInt = 16
    """Rows per forward/backward pass: a minibatch's gradient is accumulated over micro-batches,
    which bounds memory and keeps large batches cache-friendly without changing the update."""
    learning_rate: NonNegativeFloat = 1e-5
    """Adam learning rate (0 measures what an update does without moving: see benchmarks/)."""
    n_epochs: PositiveInt = 5
    """Passes over each rollout."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount factor."""
    gae_lambda: float = Field(0.95, ge=0, le=1)
    """GAE lambda."""
    ent_coef: NonNegativeFloat = 0.0
    """Entropy bonus coefficient."""
    vf_coef: NonNegativeFloat = 0.5
    """Value-loss coefficient."""
    max_grad_norm: PositiveFloat = 0.5
    """Gradient clipping norm."""
    normalize_advantage: bool = True
    """Whiten advantages per rollout."""
    target_kl: PositiveFloat | None = None
    """Stop the update phase at the first minibatch whose approximate KL to the rollout policy
    exceeds 1.5 x this, before its step (stable-baselines3's and RL4LMs's rule)."""
    disable_dropout: bool = True
    """Run the policy (and critic) without dropout during RL, in rollouts and updates alike, as
    RL4LMs (its models stay in eval mode) and TRL do. With dropout in the update, the ratio
    pi/pi_old compares a dropped-out network with the one that sampled: noise before any step."""
    verbose: int = Field(0, ge=0)
    """As stable-baselines3's (RL4LMs's configs say 1): from 1 up, every iteration's statistics
    are logged at INFO; at 0, at DEBUG."""
    bf16: bool = False
    """Forward passes (sampling, reference, values, update) in bfloat16 under autocast, weights and
    losses in float32 (``rl/precision.py``; TRL's and Hugging Face's name). Needs a GPU or a CPU
    with bfloat16 instructions; a chain's supervised stage runs in it too. A config may say ``auto``
    (the small profile does): bfloat16 where the machine runs it natively, decided when the config
    is resolved (``resolve.with_precision_decided``)."""
    fp16: bool = False
    """The same in float16, with loss scaling (CUDA only)."""

    @model_validator(mode="after")
    def _one_precision(self) -> AlgArgs:
        one_precision(self.bf16, self.fp16)
        return self


class PPOArgs(AlgArgs):
    """Proximal Policy Optimization."""

    clip_range: PositiveFloat = 0.2
    """Policy ratio clipping."""
    clip_range_vf: PositiveFloat | None = None
    """Value clipping around the rollout values (None: no clipping)."""


class NLPOArgs(PPOArgs):
    """Natural Language Policy Optimization: PPO with a top-p masking policy."""

    masked_sampling: ClassVar[bool] = True


class GroupArgs(PPOArgs):
    """Critic-free, group-sampled policy optimisation: each prompt is answered ``group_size``
    times and the group's rewards are each other's baseline. ``n_steps`` counts episodes (a
    multiple of ``group_size``); gamma, gae_lambda, vf_coef and clip_range_vf have no use."""

    group_size: int = Field(4, ge=2)
    """Responses sampled per prompt (TRL's num_generations)."""
    n_epochs: PositiveInt = 1
    """Passes over each rollout (TRL's num_iterations): 1 makes one update per rollout."""

    @model_validator(mode="after")
    def _whole_groups(self) -> GroupArgs:
        if self.n_steps % self.group_size:
            raise ArgProblems(
                Problem(
                    f"n_steps ({self.n_steps}) must be a multiple of group_size ({self.group_size}): "
                    "every prompt is answered group_size times",
                    key="n_steps",
                    fix=f"use a multiple of {self.group_size}, e.g. "
                    f"{max(self.group_size, self.n_steps // self.group_size * self.group_size)}",
                )
            )
        return self


class GRPOArgs(GroupArgs):
    """Group Relative Policy Optimization (Shao et al. 2024)."""

    scale_rewards: bool = True
    """Divide each group's centred rewards by the group's standard deviation."""


class RLOOArgs(GroupArgs):
    """REINFORCE Leave-One-Out (Ahmadian et al. 2024)."""


class A2CArgs(AlgArgs):
    """Advantage actor-critic: one unclipped update per rollout."""

    n_epochs: PositiveInt = 1
    normalize_advantage: bool = False
    """Whiten advantages (stable-baselines3's A2C default, which RL4LMs inherits: off)."""
    use_rms_prop: bool = False
    """Use RMSprop as in SB3's A2C (default Adam)."""

    @model_validator(mode="after")
    def _one_epoch(self) -> A2CArgs:
        if self.n_epochs != 1:
            raise ArgProblems(
                Problem("A2C makes exactly one update per rollout", key="n_epochs", fix="set n_epochs to 1")
            )
        return self


class TRPOArgs(AlgArgs):
    """Trust Region Policy Optimization."""

    target_kl: PositiveFloat | None = 0.01
    """KL limit of the natural-gradient step."""
    cg_max_steps: PositiveInt = 15
    """Conjugate-gradient iterations."""
    cg_damping: PositiveFloat = 0.1
    """Damping added to the Fisher-vector product."""
    line_search_shrinking_factor: float = Field(0.8, gt=0, lt=1)
    """Step shrink per backtracking try."""
    line_search_max_iter: PositiveInt = 10
    """Backtracking tries."""
    n_critic_updates: PositiveInt = 10
    """Value-function regression steps per rollout."""
    sub_sampling_factor: PositiveInt = 1
    """Use every k-th sample for the Fisher-vector products."""

    @model_validator(mode="after")
    def _no_loss_scaling(self) -> TRPOArgs:
        if self.fp16:
            raise ArgProblems(
                Problem(
                    "TRPO moves the actor by its natural-gradient step, which no loss scaler guards: "
                    "it does not run in fp16",
                    key="fp16",
                    fix="use bf16 or fp32",
                )
            )
        return self


PEFT_KEYS_SET_HERE = {
    "task_type": "it follows the model type (CAUSAL_LM or SEQ_2_SEQ_LM)",
    "base_model_name_or_path": "it is the run's base model",
    "revision": "it is the run's base model",
    "inference_mode": "the adapter trains",
    "auto_mapping": "peft sets it",
    "peft_version": "peft sets it",
}
"""Arguments of a peft config that GRUE Bench sets itself, and why."""


class PeftSettings(Strict):
    """A PEFT adapter: its method and that method's own config arguments (LoRA's ``r``,
    ``lora_alpha``, ``lora_dropout``, ``target_modules``, ...), checked against the installed
    ``peft``. Only the adapter trains (with the value head); the base weights stay frozen."""

    model_config = ConfigDict(extra="allow")

    peft_type: str = "LORA"
    """The method, as ``peft`` names it (LORA, IA3, LOHA, LOKR, ...): the other keys are the
    arguments of its config class (LoraConfig for LORA)."""
    merge: bool = False
    """GRUE Bench's key: write the final ``model/`` with the adapter merged into the base
    weights (a plain transformers model) instead of the adapter alone (a peft folder)."""

    @model_validator(mode="after")
    def _peft_arguments(self) -> PeftSettings:
        try:
            config_class = peft_config_class(self.peft_type)
        except ValueError as exc:
            raise ArgProblems(
                Problem(str(exc), key="peft_type", fix="use an adapter method peft knows, e.g. LORA")
            ) from None
        kwargs = self.config_kwargs()
        for key, why in PEFT_KEYS_SET_HERE.items():
            if key in kwargs:
                raise ArgProblems(Problem(f"'{key}' is set by GRUE Bench ({why})", key=key, fix="remove it"))
        hints = typing.get_type_hints(config_class)
        names = [field.name for field in dataclasses.fields(config_class)]
        create_model(  # type: ignore[call-overload]
            f"{config_class.__name__}Args",
            __config__=ConfigDict(extra="forbid"),
            **{name: (_checkable(hints.get(name)), None) for name in names if name not in PEFT_KEYS_SET_HERE},
        ).model_validate(kwargs)  # an unknown key or a wrong type fails here, under its key path
        try:
            config_class(**kwargs)
        except (TypeError, ValueError) as exc:
            raise ArgProblems(
                Problem(
                    f"{config_class.__name__} refuses these arguments: {exc}",
                    fix=f"give arguments {config_class.__name__} accepts (see peft's documentation)",
                )
            ) from None
        return self

    def config_kwargs(self) -> dict[str, Any]:
        """The arguments of the method's peft config class (GRUE Bench's own keys left out)."""
        return dict(self.model_extra or {})


def _checkable(hint: Any) -> Any:
    """A peft field's annotation if pydantic can check values against it, else ``Any``."""
    try:
        TypeAdapter(hint)
    except (PydanticSchemaGenerationError, TypeError):
        return Any
    return hint


def peft_config_class(peft_type: str) -> type:
    """peft's config class of ``peft_type``; prompt-learning methods are refused (their virtual
    tokens change the sequences that the sampler and the scoring pass line up)."""
    # peft imports torch and transformers: only a config that asks for an adapter pays for it
    from peft.config import PromptLearningConfig
    from peft.mapping import PEFT_TYPE_TO_CONFIG_MAPPING

    classes = {str(getattr(key, "value", key)): value for key, value in PEFT_TYPE_TO_CONFIG_MAPPING.items()}
    if peft_type not in classes:
        known = sorted(classes)
        close = difflib.get_close_matches(peft_type, known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"unknown peft_type '{peft_type}': {hint}peft knows {', '.join(known)}")
    config_class = classes[peft_type]
    if issubclass(config_class, PromptLearningConfig):
        raise ValueError(
            f"peft_type '{peft_type}' is a prompt-learning method (virtual tokens), which GRUE "
            "Bench does not support: use an adapter method such as LORA"
        )
    return config_class


class SupervisedArgs(Strict):
    """Teacher-forced cross-entropy on the references (RL4LMs's ``training_args``)."""

    needs_policy: ClassVar[bool] = False

    per_device_train_batch_size: PositiveInt = 16
    num_train_epochs: PositiveFloat = 1
    learning_rate: PositiveFloat = 1e-4
    weight_decay: NonNegativeFloat = 0.0
    warmup_steps: int = Field(0, ge=0)
    lr_scheduler_type: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    gradient_accumulation_steps: PositiveInt = 1
    max_grad_norm: PositiveFloat = 1.0
    logging_steps: PositiveInt = 500
    """Every this many optimizer steps the mean training loss is logged and recorded, and a
    ``supervised`` run is evaluated on validation (RL4LMs's evaluation callback runs on log)."""
    save_steps: PositiveInt | None = None
    """Every this many optimizer steps a ``supervised`` run, or a chain's warm start, saves the
    checkpoint a killed run goes on from (Hugging Face's ``TrainingArguments.save_steps``);
    unset, at every ``logging_steps``. It changes nothing fitted: no run key or warm-start key
    hashes it."""
    save_total_limit: PositiveInt | None = None
    """At most this many checkpoints kept: a run keeps one (its final ``model/``; a warm start the
    fit its chains share, ``warm_starts/<key>/``), so every limit holds."""
    bf16: bool = False
    """The loss's forward pass in bfloat16 under autocast, weights and loss in float32 (Hugging
    Face's ``TrainingArguments.bf16``); ``auto`` as in ``AlgArgs.bf16``."""
    fp16: bool = False
    """The same in float16, with loss scaling (CUDA only)."""
    gradient_checkpointing: bool = False
    """Keep each decoder layer's input only and recompute the rest in the backward pass (Hugging
    Face's ``TrainingArguments.gradient_checkpointing``): the same fit in about a third of the
    activation memory, its steps about 1.45x as long (SmolLM2-135M, 500-token prompts,
    benchmarks/README.md)."""
    peft: PeftSettings | None = None
    """Fit a PEFT adapter (LoRA by default) instead of every weight (``alg.training_args.peft``).
    A warm start's adapter is merged into the weights that RL starts from."""

    @property
    def checkpoint_every(self) -> int:
        """The optimizer steps between checkpoints: ``save_steps``, else ``logging_steps``."""
        return self.save_steps or self.logging_steps

    @model_validator(mode="after")
    def _one_precision(self) -> SupervisedArgs:
        one_precision(self.bf16, self.fp16)
        return self


class PolicyArgs(Strict):
    """Actor-critic LM policy (RL4LMs's ``alg.policy.args``); registered per model type, below."""

    model_type: ClassVar[Literal["causal", "seq2seq"]]
    maskable: ClassVar[bool] = False

    model_name: str | None = None
    """Hub id or local path; None takes the profile's model."""
    apply_model_parallel: bool = True
    """RL4LMs's switch for splitting one process's model over all its GPUs (``parallelize()``,
    gone from transformers). Here a process trains on one device and GPUs are used through
    ``accelerate launch`` (data parallel; DeepSpeed/FSDP for a model larger than one GPU): with
    several GPUs visible to one process, true logs how to use them. On one device, both values
    mean the same, as in RL4LMs."""
    prompt_truncation_side: Literal["left", "right"] = "left"
    generation_kwargs: GenerationKwargs = Field(default_factory=GenerationKwargs)

    @field_validator("generation_kwargs")
    @classmethod
    def _no_post_processing(cls, kwargs: GenerationKwargs) -> GenerationKwargs:
        """Rollouts are scored by the reward on the raw texts, so a post-processor here would be
        silently ignored in training (RL4LMs would pass it to ``generate()`` and fail)."""
        if kwargs.post_processing_fn is not None:
            raise ValueError(
                "post_processing_fn applies to evaluation texts only: "
                "set it in train_evaluation.generation_kwargs"
            )
        return kwargs

    critic: Literal["shared", "separate"] = "shared"
    """Value head on the policy's trunk (one LM copy less) or a separate critic model."""
    peft: PeftSettings | None = None
    """Train a PEFT adapter (LoRA by default) instead of every weight: the KL's reference is the
    base with the adapter disabled, and the final ``model/`` holds the adapter (``merge``: the
    merged weights)."""
    compile_sampler: bool = False
    """Compile the rollout sampler's decode step with ``torch.compile`` over a static KV cache
    (causal LMs): about twice as fast per step on the benchmark's model, after a one-off
    compilation per rollout batch size (24 s on CPU here, ~5 s with Inductor's cache warm)."""

    @model_validator(mode="after")
    def _compiled_sampling_only(self) -> PolicyArgs:
        """The compiled decode step serves plain sampling; ``generate()`` would run the rest."""
        kwargs = self.generation_kwargs.as_kwargs()
        if self.compile_sampler and not (kwargs.get("do_sample") and set(kwargs) <= SAMPLED_SETTINGS):
            raise ArgProblems(
                Problem(
                    "compile_sampler compiles the sampling loop, but these generation settings go to "
                    "generate() (greedy or beam search, penalties, ...)",
                    key="compile_sampler",
                    fix=f"sample (do_sample: true, with {', '.join(sorted(SAMPLED_SETTINGS))} only) or "
                    "set compile_sampler: false",
                )
            )
        return self


class MaskablePolicyArgs(PolicyArgs):
    """A policy whose sampling is masked by a periodically refreshed copy (NLPO)."""

    maskable: ClassVar[bool] = True

    top_mask: float = Field(0.9, gt=0, le=1)
    """Keep the masking model's top-p tokens."""
    mask_type: Literal["learned_top_p", "learned_top_k"] = "learned_top_p"
    target_update_iterations: PositiveInt = 20
    """Refresh the masking model from the policy every this many iterations."""
    min_tokens_to_keep: PositiveInt = 100
    """Never mask below this many tokens."""


class CausalPolicyArgs(PolicyArgs):
    """A causal LM with a value head (RL4LMs's ``causal_lm_actor_critic_policy``)."""

    model_type: ClassVar[Literal["causal", "seq2seq"]] = "causal"


class Seq2SeqPolicyArgs(PolicyArgs):
    """An encoder-decoder LM with a value head (RL4LMs's ``seq2seq_lm_actor_critic_policy``)."""

    model_type: ClassVar[Literal["causal", "seq2seq"]] = "seq2seq"


class MaskableCausalPolicyArgs(MaskablePolicyArgs):
    """RL4LMs's ``maskable_causal_lm_actor_critic_policy``."""

    model_type: ClassVar[Literal["causal", "seq2seq"]] = "causal"


class MaskableSeq2SeqPolicyArgs(MaskablePolicyArgs):
    """RL4LMs's ``maskable_seq2seq_lm_actor_critic_policy``."""

    model_type: ClassVar[Literal["causal", "seq2seq"]] = "seq2seq"
