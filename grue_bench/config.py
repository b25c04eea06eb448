"""The run configuration's typed schema: RL4LMs's YAML sections unchanged, plus GRUE Bench's
own keys. Structure and types only (unknown keys are errors); ids and component arguments are
checked against the registries by ``grue_bench.resolve``, which loads configs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, get_args

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

from grue_bench.errors import Problem
from grue_bench.rl.hparams import GenerationKwargs
from grue_bench.schema import ArgProblems, Component, Strict
from grue_bench.yamlio import dump_yaml

Tracker = Literal["tensorboard", "wandb", "mlflow", "trackio"]
"""An experiment tracker a run can report to, by its name in Hugging Face Trainer's ``report_to``."""
TRACKERS: tuple[str, ...] = get_args(Tracker)


class TokenizerConfig(Strict):
    model_name: str | None = None
    """Hub id or path; None takes the profile's tokenizer."""
    padding_side: Literal["left", "right"] = "left"
    truncation_side: Literal["left", "right"] = "left"
    pad_token_as_eos_token: bool = True
    """Pad with EOS when the tokenizer has no pad token (GPT-2); RL4LMs's default is true too."""
    max_length: PositiveInt | None = None
    """Read by RL4LMs's supervised trainer only: the prompt width its model generates with for
    evaluation (RL4LMs's default, the tokenizer's model_max_length; here, unset,
    env.args.max_prompt_length). RL algorithms take env.args.max_prompt_length."""


class EnvArgs(Strict):
    max_prompt_length: PositiveInt = 512
    max_episode_length: PositiveInt = 100
    terminate_on_eos: bool = True
    prompt_truncation_side: Literal["left", "right"] = "left"
    context_start_token: NonNegativeInt | None = None
    """The token the response's context opens with: a seq2seq decoder's first input (T5: 0), or,
    for a causal LM, a token after the prompt that it continues from; None: the model's own start."""


class EnvConfig(Strict):
    n_envs: PositiveInt = 1
    args: EnvArgs = Field(default_factory=EnvArgs)


class KLConfig(Strict):
    coeff: NonNegativeFloat = 0.001
    """Initial KL penalty coefficient beta."""
    target_kl: PositiveFloat | None = None
    """Target KL of the adaptive controller; None keeps beta fixed."""
    update_rate: PositiveFloat = 0.1
    """Adaptive controller step: beta <- beta * (1 + update_rate * clipped relative KL error)."""


class PolicyConfig(Strict):
    id: str
    args: dict[str, Any] = Field(default_factory=dict)


class AlgConfig(Strict):
    id: str
    args: dict[str, Any] = Field(default_factory=dict)
    kl_div: KLConfig | None = None
    policy: PolicyConfig | None = None
    # RL4LMs's supervised trainer keys:
    training_args: dict[str, Any] | None = None
    model_type: Literal["causal", "seq2seq"] | None = None
    model_name: str | None = None
    generation_kwargs: GenerationKwargs | None = None


class TrainEvaluationConfig(Strict):
    eval_batch_size: PositiveInt = 100
    n_iters: PositiveInt = 100
    eval_every: PositiveInt = 10
    save_every: PositiveInt | None = None
    metrics: list[Component] = Field(default_factory=list)
    generation_kwargs: GenerationKwargs | None = None
    """None evaluates with the kwargs the model is trained with, as RL4LMs does."""


class RunConfig(Strict):
    """One experiment: RL4LMs's sections plus ``task``, ``profile``, ``seeds``, ``store``..."""

    # GRUE Bench keys
    task: str | None = None
    """Task plugin id; supplies the datapool, reward and metrics left out here."""
    profile: str = "tiny"
    """tiny (offline, CPU), small (offline pretrained SmolLM2) or paper (hub models)."""
    seeds: list[int] | PositiveInt = 1
    """A list of seeds, or how many (0..n-1)."""
    store: str | None = None
    """SQLite results store."""
    output_dir: str | None = None
    """Where run artifacts (checkpoints, JSONL logs, predictions) go."""
    report_to: list[Literal[Tracker, "all"]] = Field(default_factory=list)
    """Experiment trackers each run also logs to, as Hugging Face Trainer's ``report_to``: a list or a
    comma-separated string of tensorboard, wandb, mlflow, trackio; all (the installed ones); none."""
    # RL4LMs keys
    tokenizer: TokenizerConfig = Field(default_factory=TokenizerConfig)
    datapool: Component | None = None
    reward_fn: Component | None = None
    env: EnvConfig = Field(default_factory=EnvConfig)
    alg: AlgConfig
    train_evaluation: TrainEvaluationConfig = Field(default_factory=TrainEvaluationConfig)

    @field_validator("report_to", mode="before")
    @classmethod
    def _tracker_list(cls, value: Any) -> Any:
        """``"tensorboard,wandb"`` is a list; ``none`` (or null) is no tracker."""
        if value is None:
            return []
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        return [] if value == ["none"] else value

    @field_validator("seeds")
    @classmethod
    def _seeds_numpy_takes(cls, seeds: list[int] | int) -> list[int] | int:
        """A run seeds numpy, which takes 0 to 2**32 - 1."""
        bad = [i for i, seed in enumerate(seeds) if not 0 <= seed < 2**32] if isinstance(seeds, list) else []
        if bad:
            raise ArgProblems(
                *(
                    Problem(
                        f"seed {seeds[i]} is outside 0 to 2**32 - 1",
                        key=str(i),
                        fix="give a seed from 0 to 4294967295",
                    )
                    for i in bad
                )
            )
        return seeds

    def seed_list(self) -> list[int]:
        """The seeds to run."""
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, without keys left at None."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_yaml(self) -> str:
        return dump_yaml(self.to_dict())

    def hash(self) -> str:
        """A stable hash of what determines results (seeds, store, output paths, trackers and the
        supervised stage's ``save_steps`` excluded)."""
        data = self.to_dict()
        for key in ("seeds", "store", "output_dir", "report_to"):
            data.pop(key, None)
        training_args = hashed_training_args(data["alg"].pop("training_args", {}))
        if training_args:
            data["alg"]["training_args"] = training_args
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def hashed_training_args(training_args: dict[str, Any]) -> dict[str, Any]:
    """A supervised stage's settings as run keys hash them: without ``save_steps``, how often a
    checkpoint is saved, which changes nothing fitted. (``train_evaluation.save_every``, RL's, is
    hashed: the keys of the runs stored before this rule keep it.)"""
    return {key: value for key, value in training_args.items() if key != "save_steps"}
