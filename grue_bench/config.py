"""The run configuration: the RL4LMs YAML schema unchanged, plus GRUE Bench's own keys.

Loading happens in two passes, both collecting every problem before failing once:
1. structure and types (pydantic, unknown keys are errors);
2. ids against the registries, and each component's ``args`` against what it accepts.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, ValidationError

from grue_bench.errors import GrueError, Problem
from grue_bench.rl.hparams import GenerationKwargs, PolicyArgs
from grue_bench.schema import Strict, args_model, problems_from
from grue_bench.yamlio import dump_yaml, parse_yaml, read_yaml_mapping


class Component(Strict):
    """A registered component chosen by id, with its arguments."""

    id: str
    args: dict[str, Any] = Field(default_factory=dict)


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
    # RL4LMs keys
    tokenizer: TokenizerConfig = Field(default_factory=TokenizerConfig)
    datapool: Component | None = None
    reward_fn: Component | None = None
    env: EnvConfig = Field(default_factory=EnvConfig)
    alg: AlgConfig
    train_evaluation: TrainEvaluationConfig = Field(default_factory=TrainEvaluationConfig)

    def seed_list(self) -> list[int]:
        """The seeds to run."""
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, without keys left at None."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_yaml(self) -> str:
        return dump_yaml(self.to_dict())

    def hash(self) -> str:
        """A stable hash of what determines results (seeds, store and output paths excluded)."""
        data = self.to_dict()
        for key in ("seeds", "store", "output_dir"):
            data.pop(key, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# --- overrides --------------------------------------------------------------------------------


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply ``a.b.c=value`` (value parsed as YAML) to nested ``data`` in place."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise GrueError(
            f"override '{assignment}' is not of the form key.path=value",
            source="--set",
            fix="write e.g. --set alg.args.learning_rate=1e-5",
        )
    value = parse_yaml(raw, f"--set {key}") if raw.strip() else None
    node = data
    parts = key.split(".")
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise GrueError(
                f"cannot set '{key}': '{'.'.join(parts[: i + 1])}' is a value, not a section",
                source="--set",
                fix="override the section's key itself",
            )
        node = child
    node[parts[-1]] = value


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``, recursively for mappings (lists and values replace).

    A component given with another ``id`` replaces the base's whole component: the arguments
    of one component mean nothing to another.
    """
    merged = copy.deepcopy(base)
    for key, value in update.items():
        old = merged.get(key)
        if (
            isinstance(value, dict)
            and isinstance(old, dict)
            and value.get("id", old.get("id")) == old.get("id")
        ):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# --- validation -------------------------------------------------------------------------------


def _check_component(
    kind: str, component: Component | PolicyConfig, key: str, problems: list[Problem]
) -> None:
    from grue_bench import plugins

    registry = plugins.REGISTRIES[kind]
    if component.id not in registry:
        err = registry.unknown(component.id, key=f"{key}.id")
        problems.extend(err.problems)
        return
    try:
        target = registry.get(component.id)
        if kind == "datapools":  # a pool's args are those of prepare(split, **args)
            target, skip = target.prepare, ("split",)
        else:
            skip = ()
        model = args_model(target, component.id, skip)
        model.model_validate(component.args)
    except ValidationError as exc:
        problems.extend(problems_from(exc, f"{key}.args"))
    except GrueError as exc:
        problems.extend(Problem(p.message, p.key or f"{key}.id", p.fix) for p in exc.problems)


def _check_alg(alg: AlgConfig, problems: list[Problem]) -> None:
    from grue_bench import plugins

    if alg.id not in plugins.ALGORITHMS:
        problems.extend(plugins.ALGORITHMS.unknown(alg.id, key="alg.id").problems)
        return
    hparams = plugins.ALGORITHMS.get(alg.id)
    if hparams.needs_policy:
        try:
            hparams.model_validate(alg.args)
        except ValidationError as exc:
            problems.extend(problems_from(exc, "alg.args"))
        for key in ("training_args", "model_type", "model_name", "generation_kwargs"):
            if getattr(alg, key) is not None:
                problems.append(
                    Problem(
                        f"'{key}' belongs to the supervised trainer, not to '{alg.id}'",
                        f"alg.{key}",
                        "remove it (RL algorithms take alg.args and alg.policy)",
                    )
                )
    else:
        try:
            hparams.model_validate({**alg.args, **(alg.training_args or {})})
        except ValidationError as exc:
            problems.extend(problems_from(exc, "alg.training_args"))
    if alg.policy is None:
        return
    if alg.policy.id not in plugins.POLICIES:
        problems.extend(plugins.POLICIES.unknown(alg.policy.id, key="alg.policy.id").problems)
        return
    policy_args: type[PolicyArgs] = plugins.POLICIES.get(alg.policy.id)
    try:
        policy_args.model_validate(alg.policy.args)
    except ValidationError as exc:
        problems.extend(problems_from(exc, "alg.policy.args"))
    if hparams.masked_sampling and not policy_args.maskable:
        problems.append(
            Problem(
                f"'{alg.id}' samples through a mask and needs a maskable policy, got '{alg.policy.id}'",
                "alg.policy.id",
                "use maskable_causal_lm_actor_critic_policy or maskable_seq2seq_lm_actor_critic_policy",
            )
        )


def _check_post_processor(kwargs: GenerationKwargs | None, key: str, problems: list[Problem]) -> None:
    """A named post-processor must be registered: a typo would otherwise fail only at evaluation."""
    from grue_bench import plugins

    if kwargs is None or kwargs.post_processing_fn is None:
        return
    id = kwargs.post_processing_fn.id
    if id not in plugins.POST_PROCESSORS:
        problems.extend(plugins.POST_PROCESSORS.unknown(id, key=f"{key}.post_processing_fn.id").problems)


def _parsed(model: type[Strict], data: Any) -> Any:
    """``data`` as ``model`` if it is structurally valid, else None (the structural pass reports it)."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _semantic_problems(data: dict[str, Any]) -> list[Problem]:
    """Ids and component args, section by section, so that one broken section hides no others."""
    from grue_bench import plugins

    problems: list[Problem] = []
    task = data.get("task")
    if isinstance(task, str) and task not in plugins.TASKS:
        problems.extend(plugins.TASKS.unknown(task, key="task").problems)
    for kind, key in (("datapools", "datapool"), ("rewards", "reward_fn")):
        component = _parsed(Component, data.get(key))
        if component is not None:
            _check_component(kind, component, key, problems)
    evaluation = data.get("train_evaluation")
    metrics = evaluation.get("metrics") if isinstance(evaluation, dict) else None
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        component = _parsed(Component, metric)
        if component is not None:
            _check_component("metrics", component, f"train_evaluation.metrics.{i}", problems)
    alg = _parsed(AlgConfig, data.get("alg"))
    if alg is not None:
        _check_alg(alg, problems)
        _check_post_processor(alg.generation_kwargs, "alg.generation_kwargs", problems)
    te = _parsed(TrainEvaluationConfig, evaluation or {})
    if te is not None:
        _check_post_processor(te.generation_kwargs, "train_evaluation.generation_kwargs", problems)
    tokenizer = data.get("tokenizer") if isinstance(data.get("tokenizer"), dict) else {}
    if alg is not None and alg.id != "supervised" and "max_length" in tokenizer:
        problems.append(
            Problem(
                f"tokenizer.max_length is read by the supervised trainer only, not by '{alg.id}' "
                "(RL4LMs ignores it there too)",
                "tokenizer.max_length",
                "remove it; env.args.max_prompt_length sets the prompt width of RL algorithms",
            )
        )
    if task is None and data.get("datapool") is None:
        problems.append(
            Problem("neither 'task' nor 'datapool' is set", "task", "add task: <id> (see `grue ls tasks`)")
        )
    return problems


def build_config(data: dict[str, Any], source: str) -> RunConfig:
    """Validate plain data as a run config; every problem is reported at once."""
    problems: list[Problem] = []
    config = None
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        problems.extend(problems_from(exc))
    problems.extend(_semantic_problems(data))
    if problems:
        raise GrueError.many(problems, source)
    return config


def load_config(path: str | Path | None, overrides: list[str] = (), base: dict | None = None) -> RunConfig:
    """Read a config file (or start from ``base``), apply ``--set`` overrides and validate."""
    data = deep_merge(base or {}, read_yaml_mapping(path) if path else {})
    for assignment in overrides:
        apply_override(data, assignment)
    source = str(path) if path else "command-line config"
    if overrides:
        source += " (with --set overrides)"
    return build_config(data, source)
