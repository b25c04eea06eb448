"""What a run generates with: prompt width and truncation, new tokens and sampling kwargs, from the
config's ``env`` and generation kwargs (training and evaluation)."""

from __future__ import annotations

from grue_bench.config import RunConfig
from grue_bench.rl.hparams import GenerationKwargs
from grue_bench.rl.rollout import GenerationSettings


def training_generation_kwargs(config: RunConfig):
    """What the model generates with in training: the policy's ``generation_kwargs``, or, without
    a policy, the supervised trainer's ``alg.generation_kwargs``."""
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
