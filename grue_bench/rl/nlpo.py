"""Natural Language Policy Optimization (Ramamurthy et al. 2022): PPO with a masking policy.

A masking model, a copy of the policy refreshed every ``target_update_iterations``, keeps only
its top-p tokens (at least ``min_tokens_to_keep``). The policy samples from its own
distribution restricted to that set, and the same restriction enters the probability ratio,
so the update below is PPO's, unchanged, on masked distributions.

With an adapter (``alg.policy.args.peft``) the copy is of the adapter alone, on the policy's own
frozen base weights: RL4LMs's masking model (the policy as it was at the last refresh) for the
memory of an adapter.
"""

from __future__ import annotations

from typing import Any

from grue_bench.rl.hparams import MaskablePolicyArgs, NLPOArgs
from grue_bench.rl.masking import ActionMasker
from grue_bench.rl.policy import ActorCritic, frozen_copy, frozen_names, load_trained_state, trained_state
from grue_bench.rl.ppo import PPO


class NLPO(PPO):
    Args = NLPOArgs
    args: NLPOArgs

    def __init__(self, policy: ActorCritic, *args: Any, mask_args: MaskablePolicyArgs, **kwargs: Any) -> None:
        masker = ActionMasker(
            frozen_copy(policy.lm),
            policy.model_type,
            mask_args.mask_type,
            mask_args.top_mask,
            mask_args.min_tokens_to_keep,
        )
        self.target_update_iterations = mask_args.target_update_iterations
        super().__init__(policy, *args, masker=masker, **kwargs)
        masker.model.to(self.device)
        self.masker = masker

    def state_dict(self) -> dict[str, Any]:
        """PPO's, and the masking model's trained weights."""
        frozen = frozen_names(self.unwrapped.lm)
        return {**super().state_dict(), "mask_model": trained_state(self.masker.model, frozen)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        load_trained_state(self.masker.model, state["mask_model"], frozen_names(self.unwrapped.lm))

    def before_rollout(self) -> None:
        if self.iteration > 0 and self.iteration % self.target_update_iterations == 0:
            self.refresh_mask_model()

    def refresh_mask_model(self) -> None:
        """Copy the policy's current weights into the masking model, in place (the sampler
        holds it); with an adapter, the adapter's only (the two share the frozen base)."""
        frozen = frozen_names(self.unwrapped.lm)
        load_trained_state(self.masker.model, trained_state(self.unwrapped.lm, frozen), frozen)
