"""Build a run from its config: ``build_run(config, seed)`` seeds everything and loads the base LM
and the data pools; the ``Run`` it returns builds the stages that train (the supervised stage, the
RL algorithm with its policy, reward and generation settings) and trains them in the one loop,
``rl.trainer.Trainer``. ``grue run`` (``runner/run.py``, which adds the recording and evaluating
callbacks and the warm start's cache), the Python API ``train`` and the benchmarks all build
here::

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
from pathlib import Path
from typing import Any

import numpy
import torch

from grue_bench import plugins
from grue_bench.config import RunConfig
from grue_bench.data import Sample, TextGenPool
from grue_bench.datapools import TaskPool, task_corpus
from grue_bench.models import BaseLM, load_base_lm
from grue_bench.plugins.components import build, checked_args
from grue_bench.resolve import supervised_args
from grue_bench.rl.adapters import add_adapter, merged
from grue_bench.rl.algorithm import OnPolicyAlgorithm
from grue_bench.rl.checkpoint import META_FILE
from grue_bench.rl.hparams import PeftSettings
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.precision import Precision
from grue_bench.rl.supervised import Supervised
from grue_bench.rl.trainer import Algorithm, Callback, Trainer
from grue_bench.runner.callbacks import AcrossProcesses, Resume, SaveEvery
from grue_bench.runner.generation import generation_settings
from grue_bench.runner.world import is_lead_process

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
class Run:
    """A seeded run before training: its config, base LM and data pools. It builds the stages that
    train and trains them; ``label`` names the run in logs."""

    config: RunConfig
    seed: int
    base: BaseLM
    pools: dict[str, list[Sample]]
    accelerator: Any = None
    label: str = ""

    @property
    def tokenizer(self) -> Any:
        return self.base.tokenizer

    @property
    def model_type(self) -> str:
        return self.base.model_type

    def stage(self, lm) -> Algorithm:
        """The config's algorithm around ``lm``: the supervised stage of a supervised run, else RL."""
        return self.supervised(lm) if self.config.alg.id == "supervised" else self.rl(lm)

    def supervised(self, lm) -> Supervised:
        """The supervised stage on ``lm``: a supervised run's settings, or a warm start's (those of
        its task profile); with ``peft`` settings an adapter is added and fitted."""
        args = supervised_args(self.config)
        if args.peft is not None:
            lm = add_adapter(lm, self.model_type, args.peft, key="alg.training_args.peft")
        env = self.config.env.args
        return Supervised(
            lm,
            self.tokenizer,
            self.model_type,
            args,
            env.max_prompt_length,
            env.max_episode_length,
            env.prompt_truncation_side,
            self.accelerator,
            seed=self.seed,
        )

    def rl(self, lm, reward_fn: Any = None) -> OnPolicyAlgorithm:
        """The configured on-policy algorithm around ``lm``, rewarded by the config's reward (or
        ``reward_fn``); the run's seed orders its minibatches."""
        config = self.config
        # the reward first, as it always was built: a learned reward may draw from the random state
        reward_fn = reward_fn if reward_fn is not None else build_reward(config)
        algorithm_cls = plugins.ALGORITHMS.get(config.alg.id)
        hparams = algorithm_cls.Args.model_validate(config.alg.args)
        policy_args = plugins.POLICIES.get(config.alg.policy.id).model_validate(config.alg.policy.args)
        if policy_args.peft is not None:
            lm = add_adapter(lm, self.model_type, policy_args.peft, key="alg.policy.args.peft")
        policy = ActorCritic(lm, self.model_type, critic=policy_args.critic)
        kl = config.alg.kl_div
        extra = {"mask_args": policy_args} if hparams.masked_sampling else {}
        algorithm = algorithm_cls(
            policy,
            self.tokenizer,
            reward_fn,
            hparams,
            generation_settings(config),
            kl_coeff=kl.coeff if kl else 0.0,
            target_kl=kl.target_kl if kl else None,
            kl_rate=kl.update_rate if kl else 0.1,
            accelerator=self.accelerator,
            seed=self.seed,
            n_envs=config.env.n_envs,
            **extra,
        )
        _say_how_to_use_the_gpus(policy_args.apply_model_parallel, algorithm.accelerator.num_processes)
        return algorithm

    def train(
        self, stage: Algorithm, callbacks: Sequence[Callback] = (), resume_from: Path | None = None
    ) -> Trainer:
        """``stage`` trained on the train pool in the one loop, prompts drawn with the run's seed:
        an RL algorithm for ``train_evaluation.n_iters`` iterations (from the checkpoint in
        ``resume_from`` if given; each of a launch's processes on its own prompts), the supervised
        stage for its whole fit. Returns the trainer (its ``history``, ``iteration``)."""
        pool = self.pools["train"]
        first = [Resume(resume_from, self.label)] if resume_from is not None else []
        if stage.accelerator.num_processes > 1:
            first.append(AcrossProcesses(self.seed, self.label))
        trainer = Trainer(stage, pool, random.Random(self.seed), [*first, *callbacks])
        if isinstance(stage, Supervised):
            trainer.fit(stage.n_steps(pool))
        else:
            trainer.fit(self.config.train_evaluation.n_iters)
        return trainer

    def warm_started(self, lm, checkpoints: Path | None = None) -> tuple[Any, Supervised]:
        """``lm`` fitted by the supervised stage of a warm start, the adapter (if any) merged into
        its weights (what RL starts from, and its reference); with the stage that fitted it. With
        ``checkpoints``, the lead process saves a checkpoint there every ``save_steps`` (else
        ``logging_steps``) optimizer steps, and a fit that finds one goes on from it."""
        stage = self.supervised(lm)
        saving, resume_from = [], None
        if checkpoints is not None:
            saving = [SaveEvery(checkpoints, stage.args.checkpoint_every)] if is_lead_process() else []
            resume_from = checkpoints if (checkpoints / META_FILE).is_file() else None
        self.train(stage, saving, resume_from=resume_from)
        return merged(stage.model), stage


def build_run(
    config: RunConfig, seed: int, splits: Sequence[str] = SPLITS, accelerator: Any = None, label: str = ""
) -> Run:
    """Seed everything, then load the base LM and the ``splits``' pools, in that order (a run's
    random draws, and so its numbers, depend on it)."""
    set_seed(seed)
    base = load_base(config)
    pools = {split: list(load_pool(config, split)) for split in splits}
    return Run(config, seed, base, pools, accelerator, label or f"seed {seed}")


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


def run_precision(config: RunConfig, device: torch.device) -> Precision:
    """The precision of the run's last stage (a supervised run's training args, else
    ``alg.args``): its evaluations generate in it."""
    if config.alg.id == "supervised":
        args, key = supervised_args(config), "alg.training_args"
    else:
        args, key = plugins.ALGORITHMS.get(config.alg.id).Args.model_validate(config.alg.args), "alg.args"
    return Precision.from_flags(args.bf16, args.fp16, device, key)


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
    ``callbacks`` hook into the loop (``grue_bench.rl.trainer.Callback``)."""
    run = build_run(config, seed, splits=("train",), accelerator=accelerator)
    result = TrainResult(model=run.base.model, tokenizer=run.tokenizer, model_type=run.model_type)
    lm = run.base.model
    if warm_start and config.alg.id != "supervised":
        lm, fitted = run.warm_started(lm)
        result.supervised_losses = fitted.losses
    stage = run.stage(lm)
    trainer = run.train(stage, callbacks)
    result.model = stage.model
    result.history = trainer.history
    if isinstance(stage, Supervised):
        result.supervised_losses = stage.losses
    return result
