"""Assemble a training run from a config: seed, data pools, base LM, reward, algorithm, and the
supervised warm start. ``train`` is the Python API behind ``grue run``::

    from grue_bench.resolve import load_config
    from grue_bench.runner.assemble import train
    result = train(load_config("my.yml"), seed=0)
    result.model.save_pretrained("out")

An algorithm id may chain stages with '+': ``supervised+ppo`` fits the references first and
starts RL from the result (GRUE's "supervised + RL").
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy
import torch

from grue_bench import plugins
from grue_bench.config import RunConfig
from grue_bench.data import Sample, TextGenPool
from grue_bench.datapools import TaskPool, task_corpus
from grue_bench.models import BaseLM, load_base_lm
from grue_bench.plugins.components import build, checked_args
from grue_bench.rl.adapters import add_adapter, merged
from grue_bench.rl.hparams import PeftSettings, SupervisedArgs
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.supervised import Supervised
from grue_bench.rl.trainer import Callback, Trainer
from grue_bench.runner.callbacks import AcrossProcesses
from grue_bench.runner.generation import generation_settings

log = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")


@dataclass
class TrainResult:
    """The trained language model, its tokenizer and the per-iteration statistics."""

    model: Any
    tokenizer: Any
    model_type: str
    history: list[dict[str, float]] = field(default_factory=list)
    supervised_losses: list[float] = field(default_factory=list)


@dataclass
class Assembly:
    """A seeded run's base LM and its data pools, before any training."""

    base: BaseLM
    pools: dict[str, list[Sample]]


def assemble(config: RunConfig, seed: int, splits: Sequence[str] = SPLITS) -> Assembly:
    """Seed everything, then load the base LM and the ``splits``' pools, in that order (a run's
    random draws, and so its numbers, depend on it)."""
    set_seed(seed)
    base = load_base(config)
    return Assembly(base, {split: list(load_pool(config, split)) for split in splits})


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def load_pool(config: RunConfig, split: str) -> TextGenPool:
    """The config's datapool (RL4LMs id + args), or its task's data."""
    if config.datapool is not None:
        pool = config.datapool
        return plugins.DATAPOOLS.get(pool.id).prepare(
            split, **checked_args("datapools", pool.id, pool.args, "datapool.args")
        )
    return TaskPool.prepare(split, task=config.task)


def build_reward(config: RunConfig):
    """The reward function instance of the config (or of its task)."""
    component = config.reward_fn or plugins.TASKS.get(config.task).reward_fn
    return build("rewards", component.id, component.args, "reward_fn.args")


def model_type_of(config: RunConfig) -> str:
    """causal or seq2seq, from the policy id, the supervised keys or the task."""
    if config.alg.policy is not None:
        return plugins.POLICIES.get(config.alg.policy.id).model_type
    if config.alg.model_type is not None:
        return config.alg.model_type
    return plugins.TASKS.get(config.task).model_type if config.task else "causal"


def model_name_of(config: RunConfig) -> str | None:
    """The hub id or path the config names for the policy, if any."""
    if config.alg.policy is not None and config.alg.policy.args.get("model_name"):
        return config.alg.policy.args["model_name"]
    return config.alg.model_name or config.tokenizer.model_name


def load_base(config: RunConfig) -> BaseLM:
    """The base language model of the config's profile; an explicit model name wins (see ``models``)."""

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


def make_rl_algorithm(
    config: RunConfig, lm, tokenizer, model_type: str, reward_fn, accelerator=None, seed: int = 0
):
    """The configured on-policy algorithm around ``lm``; ``seed`` orders its minibatches."""
    algorithm_cls = plugins.ALGORITHMS.get(config.alg.id)
    hparams = algorithm_cls.Args.model_validate(config.alg.args)
    policy_args = plugins.POLICIES.get(config.alg.policy.id).model_validate(config.alg.policy.args)
    if policy_args.peft is not None:
        lm = add_adapter(lm, model_type, policy_args.peft, key="alg.policy.args.peft")
    policy = ActorCritic(lm, model_type, critic=policy_args.critic)
    kl = config.alg.kl_div
    extra = {"mask_args": policy_args} if hparams.masked_sampling else {}
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
    config: RunConfig,
    lm,
    tokenizer,
    model_type: str,
    samples: Sequence[Sample],
    seed: int,
    accelerator=None,
    on_log=None,
):
    """Fit ``lm`` to the references of ``samples`` (the train split); returns (model, losses,
    optimizer steps). ``on_log(step, loss, model)`` is called every ``logging_steps`` optimizer
    steps. With ``peft`` settings an adapter is fitted: a supervised run's model is the adapted
    LM, a warm start's the adapter merged into its base (what RL starts from, and its reference)."""
    args = supervised_args(config)
    if args.peft is not None:
        lm = add_adapter(lm, model_type, args.peft, key="alg.training_args.peft")
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
    losses = trainer.fit(list(samples), seed=seed, on_log=report)
    model = trainer.model if config.alg.id == "supervised" else merged(trainer.model)
    return model, losses, trainer.optimizer_steps


def supervised_args(config: RunConfig) -> SupervisedArgs:
    """The supervised stage's arguments: a supervised run's ``alg.args`` and
    ``alg.training_args``, a warm start's those of its task profile."""
    settings = {}
    if config.task is not None:
        profile = plugins.TASKS.get(config.task).profiles.get(config.profile, {})
        settings = profile.get("algs", {}).get("supervised", {}).get("training_args", {})
    if config.alg.id == "supervised":
        settings = {**config.alg.args, **(config.alg.training_args or {})}
    return SupervisedArgs.model_validate(settings)


def final_peft(config: RunConfig) -> PeftSettings | None:
    """The adapter settings of the run's last stage (RL's, or a supervised run's), if any."""
    if config.alg.id == "supervised":
        return supervised_args(config).peft
    return plugins.POLICIES.get(config.alg.policy.id).model_validate(config.alg.policy.args).peft


def train(
    config: RunConfig,
    seed: int = 0,
    callbacks: Sequence[Callback] = (),
    warm_start: bool = False,
    accelerator=None,
) -> TrainResult:
    """Train the config's algorithm (after a supervised warm start if asked); return the model.
    ``callbacks`` hook into the RL loop (``grue_bench.rl.trainer.Callback``)."""
    run = assemble(config, seed, splits=("train",))
    lm, tokenizer, model_type = run.base.model, run.base.tokenizer, run.base.model_type
    result = TrainResult(model=lm, tokenizer=tokenizer, model_type=model_type)
    if config.alg.id == "supervised" or warm_start:
        fitted = supervised_fit(config, lm, tokenizer, model_type, run.pools["train"], seed, accelerator)
        lm, result.supervised_losses, _ = fitted
        result.model = lm
        if config.alg.id == "supervised":
            return result
    algorithm = make_rl_algorithm(
        config, lm, tokenizer, model_type, build_reward(config), accelerator, seed=seed
    )
    if algorithm.accelerator.num_processes > 1:  # each process draws its own prompts and samples
        callbacks = [AcrossProcesses(seed, f"seed {seed}"), *callbacks]
    trainer = Trainer(algorithm, run.pools["train"], random.Random(seed), callbacks)
    result.model = trainer.fit(config.train_evaluation.n_iters)
    result.history = trainer.history
    return result
