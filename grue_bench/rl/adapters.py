"""PEFT adapters (LoRA, or another of ``peft``'s adapter methods) on a policy's or a supervised
model's LM.

With an adapter only its weights train (and the value head); the base weights are frozen and
held once. The KL's reference is the policy's own LM run with its adapter disabled
(``without_adapters``, as TRL does); NLPO's masking model and a separate critic are copies that
share the frozen base (``policy.shared_base_copy``): only their adapter weights are their own.
A checkpoint leaves the frozen weights out (``policy.trained_state``): a resumed run loads them
from its base again.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from torch import nn

from grue_bench.errors import GrueError
from grue_bench.rl.hparams import PeftSettings, peft_config_class

TASK_TYPES = {"causal": "CAUSAL_LM", "seq2seq": "SEQ_2_SEQ_LM"}


def add_adapter(lm: nn.Module, model_type: str, settings: PeftSettings, key: str) -> nn.Module:
    """``lm`` with a fresh adapter (a ``peft.PeftModel``) and its base weights frozen;
    ``key`` is where the settings are in the config (for the error if peft refuses them)."""
    # peft imports much of transformers' model code: runs without an adapter never load it
    from peft import get_peft_model

    config_class = peft_config_class(settings.peft_type)
    config = config_class(task_type=TASK_TYPES[model_type], **settings.config_kwargs())
    try:
        return get_peft_model(lm, config)
    except ValueError as exc:
        raise GrueError(
            f"peft cannot put this {settings.peft_type} adapter on the model: {exc}",
            key=key,
            fix="name modules the model has in target_modules (print(model) lists them), or "
            "leave target_modules out for peft's default for this architecture",
        ) from None


def is_adapted(lm: Any) -> bool:
    """Whether ``lm`` carries a peft adapter (peft is never imported for this question)."""
    peft = sys.modules.get("peft")
    return peft is not None and isinstance(lm, peft.PeftModel)


def without_adapters(lm: nn.Module) -> contextlib.AbstractContextManager:
    """A context in which ``lm`` runs as its base model: its adapters disabled, if it has any."""
    return lm.disable_adapter() if is_adapted(lm) else contextlib.nullcontext()


def merged(lm: nn.Module) -> nn.Module:
    """``lm``'s adapter merged into its base weights, in place: a plain transformers model
    (``lm`` itself when it has no adapter)."""
    return lm.merge_and_unload() if is_adapted(lm) else lm
