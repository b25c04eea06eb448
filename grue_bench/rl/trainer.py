"""Assemble a training run from a config and train: the Python API behind ``grue run``.

    from grue_bench.config import load_config
    from grue_bench.rl.trainer import train
    result = train(load_config("my.yml"), seed=0)
    result.model.save_pretrained("out")

An algorithm id may chain stages with '+': ``supervised+ppo`` fits the references first and
starts RL from the result (GRUE's "supervised + RL").
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from grue_bench.config import RunConfig
from grue_bench.data import TextGenPool

log = logging.getLogger(__name__)

IterationCallback = Callable[[int, dict[str, float], Any], None]
"""Called after every RL iteration with (iteration, stats, algorithm)."""


@dataclass
class TrainResult:
    """The trained language model, its tokenizer and the per-iteration statistics."""

    model: Any
    tokenizer: Any
    model_type: str
    history: list[dict[str, float]] = field(default_factory=list)
    supervised_losses: list[float] = field(default_factory=list)


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    import numpy

    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def load_pool(config: RunConfig, split: str) -> TextGenPool:
    """The config's datapool (RL4LMs id + args), or its task's data."""
    from grue_bench import plugins
    from grue_bench.datapools import TaskPool

    if config.datapool is not None:
        return plugins.DATAPOOLS.get(config.datapool.id).prepare(split, **config.datapool.args)
    return TaskPool.prepare(split, task=config.task)


def build_reward(config: RunConfig):
    """The reward function instance of the config (or of its task)."""
    from grue_bench import plugins

    component = config.reward_fn or plugins.TASKS.get(config.task).reward_fn
    return plugins.REWARDS.get(component.id)(**component.args)


def model_type_of(config: RunConfig) -> str:
    """causal or seq2seq, from the policy id, the supervised keys or the task."""
    from grue_bench import plugins

    if config.alg.policy is not None:
        return "seq2seq" if "seq2seq" in config.alg.policy.id else "causal"
    if config.alg.model_type is not None:
        return config.alg.model_type
    return plugins.TASKS.get(config.task).model_type if config.task else "causal"


def model_name_of(config: RunConfig) -> str | None:
    """The hub id or path the config names for the policy, if any."""
    if config.alg.policy is not None and config.alg.policy.args.get("model_name"):
        return config.alg.policy.args["model_name"]
    return config.alg.model_name or config.tokenizer.model_name


def load_base(config: RunConfig):
    """The base language model of the config's profile; an explicit model name wins (see ``models``)."""
    from grue_bench.datapools import task_corpus
    from grue_bench.models import load_base_lm

    def pool_corpus() -> list[str]:
        samples = load_pool(config, "train")
        return [s.prompt_or_input_text for s in samples] + [r for s in samples for r in s.references]

    if config.task is not None:
        corpus, corpus_id = (lambda: task_corpus(config.task)), config.task
    else:
        corpus, corpus_id = pool_corpus, f"datapool-{config.datapool.id}"
    base = load_base_lm(
        model_type_of(config),
        profile=config.profile,
        model_name=model_name_of(config),
        corpus=corpus,
        corpus_id=corpus_id,
        seed=0,
        pad_token_as_eos_token=config.tokenizer.pad_token_as_eos_token,
        padding_side=config.tokenizer.padding_side,
        truncation_side=config.tokenizer.truncation_side,
    )
    start = config.env.args.context_start_token
    if start is not None and base.model_type == "seq2seq":  # RL4LMs's decoder context opens with it
        base.model.config.decoder_start_token_id = start
        base.model.generation_config.decoder_start_token_id = start
    return base


def training_generation_kwargs(config: RunConfig):
    """What the model generates with in training: the policy's ``generation_kwargs``, or, without
    a policy, the supervised trainer's ``alg.generation_kwargs``."""
    from grue_bench.rl.hparams import GenerationKwargs

    if config.alg.policy is not None:
        return GenerationKwargs.model_validate(config.alg.policy.args.get("generation_kwargs", {}))
    return config.alg.generation_kwargs or GenerationKwargs()


def evaluation_generation_kwargs(config: RunConfig):
    """``train_evaluation.generation_kwargs`` as written; left out, the training ones (RL4LMs's
    ``policy.generate`` falls back to the policy's kwargs, its supervised trainer evaluates with
    ``alg.generation_kwargs``)."""
    return config.train_evaluation.generation_kwargs or training_generation_kwargs(config)


def supervised_prompt_width(config: RunConfig, tokenizer, model_type: str) -> int:
    """The prompt width RL4LMs's supervised trainer generates with: ``tokenizer.max_length``
    (unset, here ``env.args.max_prompt_length``), less ``max_new_tokens`` when a causal LM's
    window could not hold both."""
    width = config.tokenizer.max_length or config.env.args.max_prompt_length
    new_tokens = evaluation_generation_kwargs(config).max_new_tokens or config.env.args.max_episode_length
    if model_type == "causal" and width + new_tokens > tokenizer.model_max_length:
        width -= new_tokens
    return width


def generation_settings(config: RunConfig, evaluation: bool = False, tokenizer=None, model_type=None):
    """How prompts are cut and responses sampled, from ``env`` and the generation kwargs (a
    supervised model generates with ``supervised_prompt_width``, which needs the tokenizer)."""
    from grue_bench.rl.rollout import GenerationSettings

    env = config.env.args
    policy_args = config.alg.policy.args if config.alg.policy else {}
    kwargs = evaluation_generation_kwargs(config) if evaluation else training_generation_kwargs(config)
    width = env.max_prompt_length
    if config.alg.id == "supervised" and tokenizer is not None:
        width = supervised_prompt_width(config, tokenizer, model_type)
    return GenerationSettings(
        max_prompt_length=width,
        prompt_truncation_side=policy_args.get("prompt_truncation_side", env.prompt_truncation_side),
        max_new_tokens=env.max_episode_length,
        terminate_on_eos=env.terminate_on_eos,
        generation_kwargs=kwargs.as_kwargs(),
        compile_sampler=not evaluation and bool(policy_args.get("compile_sampler", False)),
        context_start_token=env.context_start_token,
    )


def make_rl_algorithm(
    config: RunConfig, lm, tokenizer, model_type: str, reward_fn, accelerator=None, seed: int = 0
):
    """The configured on-policy algorithm around ``lm``; ``seed`` orders its minibatches."""
    from grue_bench import plugins
    from grue_bench.registry import import_object
    from grue_bench.rl.policy import ActorCritic

    hparams_cls = plugins.ALGORITHMS.get(config.alg.id)
    hparams = hparams_cls.model_validate(config.alg.args)
    policy_args = plugins.POLICIES.get(config.alg.policy.id).model_validate(config.alg.policy.args)
    policy = ActorCritic(lm, model_type, critic=policy_args.critic)
    kl = config.alg.kl_div
    extra = {"mask_args": policy_args} if hparams_cls.masked_sampling else {}
    algorithm_cls = import_object(hparams_cls.implementation)
    algorithm = algorithm_cls(
        policy,
        tokenizer,
        reward_fn,
        hparams,
        generation_settings(config),
        kl_coeff=kl.coeff if kl else 0.0,
        target_kl=kl.target_kl if kl else None,
        kl_rate=kl.update_rate if kl else 0.1,
        accelerator=accelerator,
        seed=seed,
        n_envs=config.env.n_envs,
        **extra,
    )
    _say_how_to_use_the_gpus(policy_args.apply_model_parallel, algorithm.accelerator.num_processes)
    return algorithm


def _say_how_to_use_the_gpus(apply_model_parallel: bool, processes: int) -> None:
    """RL4LMs's ``apply_model_parallel`` split a model over one process's GPUs; say what does now."""
    import torch

    gpus = torch.cuda.device_count()
    if apply_model_parallel and processes == 1 and gpus > 1:
        log.warning(
            "alg.policy.args.apply_model_parallel: this process trains on one of the %d GPUs it "
            "sees (RL4LMs's layer split is gone from transformers); a run spans several GPUs "
            "when launched with `accelerate launch` (DeepSpeed or FSDP in its config for a model "
            "larger than one GPU)",
            gpus,
        )


def supervised_fit(
    config: RunConfig, lm, tokenizer, model_type: str, seed: int, accelerator=None, on_log=None
):
    """Fit ``lm`` to the train split's references; returns (model, losses, optimizer steps).
    ``on_log(step, loss, model)`` is called every ``logging_steps`` optimizer steps."""
    from grue_bench import plugins
    from grue_bench.rl.hparams import SupervisedArgs
    from grue_bench.rl.supervised import Supervised

    settings = {}
    if config.task is not None:
        profile = plugins.TASKS.get(config.task).profiles.get(config.profile, {})
        settings = profile.get("algs", {}).get("supervised", {}).get("training_args", {})
    if config.alg.id == "supervised":
        settings = {**config.alg.args, **(config.alg.training_args or {})}
    args = SupervisedArgs.model_validate(settings)
    env = config.env.args
    trainer = Supervised(
        lm,
        tokenizer,
        model_type,
        args,
        env.max_prompt_length,
        env.max_episode_length,
        env.prompt_truncation_side,
        accelerator,
    )
    report = None if on_log is None else (lambda step, loss: on_log(step, loss, trainer.model))
    losses = trainer.fit(list(load_pool(config, "train")), seed=seed, on_log=report)
    return trainer.model, losses, trainer.optimizer_steps


def train(
    config: RunConfig,
    seed: int = 0,
    on_iteration: IterationCallback | None = None,
    warm_start: bool = False,
    accelerator=None,
) -> TrainResult:
    """Train the config's algorithm (after a supervised warm start if asked); return the model."""
    set_seed(seed)
    base = load_base(config)
    lm, tokenizer, model_type = base.model, base.tokenizer, base.model_type
    result = TrainResult(model=lm, tokenizer=tokenizer, model_type=model_type)
    if config.alg.id == "supervised" or warm_start:
        lm, result.supervised_losses, _ = supervised_fit(config, lm, tokenizer, model_type, seed, accelerator)
        result.model = lm
        if config.alg.id == "supervised":
            return result
    algorithm = make_rl_algorithm(
        config, lm, tokenizer, model_type, build_reward(config), accelerator, seed=seed
    )
    pool = load_pool(config, "train")
    rng = random.Random(seed + 1000 * algorithm.accelerator.process_index)
    for iteration in range(config.train_evaluation.n_iters):
        stats = algorithm.step(pool, rng)
        result.history.append(stats)
        if on_iteration is not None:
            on_iteration(iteration, stats, algorithm)
    result.model = algorithm.unwrapped.lm
    return result
