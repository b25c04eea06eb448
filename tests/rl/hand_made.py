"""Episodes written by hand, for tests of credit assignment and KL statistics."""

import torch

from grue_bench.rl.batch import TokenBatch
from grue_bench.rl.episodes import Episodes


def hand_made_episodes(rewards, logprobs, ref_logprobs, mask) -> Episodes:
    """Episodes with these per-episode rewards and per-token log-probs over ``mask`` [N, T]."""
    n, t = mask.shape
    tokens = TokenBatch(
        torch.zeros(n, 1, dtype=torch.long),
        torch.ones(n, 1, dtype=torch.long),
        torch.zeros(n, t, dtype=torch.long),
        mask,
    )
    return Episodes(
        tokens,
        [""] * n,
        torch.tensor(rewards, dtype=torch.float),
        logprobs=logprobs,
        raw_logprobs=logprobs,
        ref_logprobs=ref_logprobs,
        values=None,
        action_mask=None,
    )
