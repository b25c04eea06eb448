"""The tensors of one rollout, as a typed, frozen batch (never a bare dict)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch


@dataclass(frozen=True)
class TokenBatch:
    """Prompts and responses as token ids.

    Causal models see ``prompt_ids`` (left-padded) followed by ``response_ids`` (right-padded);
    seq2seq models encode the prompt and decode the response.
    """

    prompt_ids: torch.Tensor  # [B, P]
    prompt_mask: torch.Tensor  # [B, P]
    response_ids: torch.Tensor  # [B, T]
    response_mask: torch.Tensor  # [B, T] float, 1 up to and including the last generated token

    def __len__(self) -> int:
        return self.prompt_ids.size(0)

    def select(self, index: torch.Tensor) -> TokenBatch:
        """The rows in ``index``."""
        return type(self)(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


@dataclass(frozen=True)
class Rollout(TokenBatch):
    """A token batch with what the update needs: old log-probs, values, advantages, returns."""

    logprobs: torch.Tensor  # [B, T] log pi_old(a_t | s_t)
    ref_logprobs: torch.Tensor  # [B, T]
    values: torch.Tensor | None  # [B, T] V_old(s_t); None without a critic
    advantages: torch.Tensor  # [B, T]
    returns: torch.Tensor | None  # [B, T] the critic's regression targets; None without a critic
    loss_mask: torch.Tensor  # [B, T] float: the transitions this batch trains on (see below)
    """A rollout trains on all of its transitions (``response_mask``); a minibatch of transitions
    on some tokens of its rows, the rest of each row being context only."""
    action_mask: torch.Tensor | None = None  # [B, T, V] bool: NLPO's allowed tokens, else None

    def select(self, index: torch.Tensor) -> Rollout:
        """The rows in ``index``, ``compact``."""
        return self._rows(index).compact()

    def transitions(self, rows: torch.Tensor, steps: torch.Tensor) -> Rollout:
        """The minibatch of the transitions (rows[i], steps[i]): the rows that hold them, training
        on those tokens only, ``compact``."""
        kept, row_in_batch = torch.unique(rows, return_inverse=True)
        batch = self._rows(kept)
        loss_mask = torch.zeros_like(batch.loss_mask)
        loss_mask[row_in_batch, steps] = 1.0
        return replace(batch, loss_mask=loss_mask).compact()

    def compact(self) -> Rollout:
        """The batch without the columns no trained transition needs: the prompt's padding in
        every row, and the steps after the last trained one (a causal LM's or a decoder's output
        at step t depends on nothing after t). The numbers are the same to float rounding: the
        padding is masked out of attention, positions follow the mask."""
        prompt_columns = self.prompt_mask.bool().any(0)
        trained = self.loss_mask.bool().any(0).nonzero()
        steps = int(trained[-1]) + 1 if trained.numel() else 1
        values = {}
        for f in fields(self):
            tensor = getattr(self, f.name)
            if f.name in ("prompt_ids", "prompt_mask"):
                values[f.name] = tensor[:, prompt_columns] if not prompt_columns.all() else tensor
            else:
                values[f.name] = None if tensor is None else tensor[:, :steps]
        return type(self)(**values)

    def _rows(self, index: torch.Tensor) -> Rollout:
        values = {}
        for f in fields(self):
            tensor = getattr(self, f.name)
            values[f.name] = None if tensor is None else tensor[index]
        return type(self)(**values)
