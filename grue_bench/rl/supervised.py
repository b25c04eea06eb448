"""Supervised fine-tuning: teacher-forced cross-entropy on the references.

The GRUE "supervised" baseline, and the warm start of "supervised + RL" runs. Every reference
of a sample is a training example. Causal models see ``prompt + reference + eos`` with the loss
on the reference tokens only; seq2seq models encode the prompt and decode the reference.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from grue_bench.data import Sample
from grue_bench.rl.frozen_casts import cast_frozen_weights_once
from grue_bench.rl.hparams import SupervisedArgs
from grue_bench.rl.lean_backward import keep_less_for_backward
from grue_bench.rl.policy import causal_position_ids, frozen_names, load_trained_state, trained_state
from grue_bench.rl.precision import Precision, optimizer_step, scaled
from grue_bench.rl.truncation import truncating_on

log = logging.getLogger(__name__)

IGNORE = -100


def encode_pairs(
    tokenizer,
    model_type: str,
    pairs: Sequence[tuple[str, str]],
    max_prompt: int,
    max_target: int,
    truncation_side: str = "left",
) -> dict[str, torch.Tensor]:
    """Model inputs and labels (-100 where no loss is taken) for (prompt, target) pairs: prompts cut
    on ``truncation_side``, targets on the right (the tokenizer's own side kept: ``truncating_on``)."""
    with truncating_on(tokenizer, truncation_side):
        prompts = tokenizer([p for p, _ in pairs], truncation=True, max_length=max_prompt)["input_ids"]
    with truncating_on(tokenizer, "right"):
        targets = tokenizer(
            [t for _, t in pairs], truncation=True, max_length=max_target - 1, add_special_tokens=False
        )["input_ids"]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    if model_type == "causal":
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else eos
        rows = [
            ((p or [start]) + t + [eos], [IGNORE] * len(p or [start]) + t + [eos])
            for p, t in zip(prompts, targets, strict=True)
        ]
        # padded on the left: every row's reference ends in the last column, so only the last
        # columns predict a reference token and the LM head runs on those alone (``causal_loss``)
        width = max(len(ids) for ids, _ in rows)
        ids = torch.tensor([[pad] * (width - len(r)) + r for r, _ in rows])
        labels = torch.tensor([[IGNORE] * (width - len(lab)) + lab for _, lab in rows])
        attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r, _ in rows])
        return {"input_ids": ids, "attention_mask": attention, "labels": labels}
    width_p = max(len(p) for p in prompts) or 1
    width_t = max(len(t) for t in targets) + 1
    return {
        "input_ids": torch.tensor([p + [pad] * (width_p - len(p)) for p in prompts]),
        "attention_mask": torch.tensor([[1] * len(p) + [0] * (width_p - len(p)) for p in prompts]),
        "labels": torch.tensor([t + [eos] + [IGNORE] * (width_t - len(t) - 1) for t in targets]),
    }


def causal_loss(lm, batch: dict[str, torch.Tensor], precision: Precision) -> torch.Tensor:
    """The mean token cross-entropy of ``encode_pairs``'s left-padded causal batch, as
    ``lm(**batch).loss`` computes it, with the LM head (a fifth of SmolLM2's weights, a
    [rows, columns, vocabulary] output) run only from the first column that predicts a
    reference token: on a 500-token article and its 100-token summary, a sixth of the columns."""
    labels = batch["labels"]
    first = int((labels != IGNORE).any(dim=0).nonzero()[0])  # >= 1: every row has a prompt token
    with precision.autocast():
        logits = lm(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            position_ids=causal_position_ids(batch["attention_mask"]),
            use_cache=False,
            logits_to_keep=labels.size(1) - first + 1,
        ).logits
    # column first - 1 + k predicts the token in column first + k; the last column predicts nothing
    return F.cross_entropy(
        logits[:, :-1].float().flatten(0, 1), labels[:, first:].flatten(), ignore_index=IGNORE
    )


class Supervised:
    """Fits a language model to the references of a data pool, stepped by ``Trainer`` as the RL
    algorithms are: one ``step`` runs to the next multiple of ``logging_steps`` optimizer steps
    (RL4LMs logs and evaluates at their multiples, HF Trainer's ``logging_steps``) or of
    ``save_steps`` (where a run checkpoints), ``iteration`` counts
    optimizer steps, and ``n_steps(pool)`` is the ``n_iters`` of a whole fit. The batches' order
    is drawn from ``seed`` (one shuffle per epoch), not from the trainer's prompt RNG."""

    Args = SupervisedArgs

    def __init__(
        self,
        lm,
        tokenizer,
        model_type: str,
        args: SupervisedArgs,
        max_prompt_length: int,
        max_target_length: int,
        truncation_side: str = "left",
        accelerator: Any = None,
        seed: int = 0,
    ) -> None:
        from accelerate import Accelerator

        self.args = args
        self.tokenizer = tokenizer
        self.model_type = model_type
        self.max_prompt_length = max_prompt_length
        self.max_target_length = max_target_length
        self.truncation_side = truncation_side
        self.seed = seed
        self.accelerator = accelerator or Accelerator(cpu=not torch.cuda.is_available())
        device = self.accelerator.device
        self.precision = Precision.from_flags(args.bf16, args.fp16, device, "alg.training_args")
        self.scaler = self.precision.grad_scaler()
        if args.gradient_checkpointing:
            recompute = {"use_reentrant": False}
            if hasattr(lm, "activation_checkpointing_enable"):  # transformers 5's name
                lm.activation_checkpointing_enable(activation_checkpointing_kwargs=recompute)
            else:
                lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs=recompute)
        cast_frozen_weights_once(lm)
        keep_less_for_backward(lm)
        trained = [p for p in lm.parameters() if p.requires_grad]  # with an adapter, its weights
        optimizer = torch.optim.AdamW(trained, lr=args.learning_rate, weight_decay=args.weight_decay)
        self.lm, self.optimizer = self.accelerator.prepare(lm, optimizer)
        self.iteration = 0
        """Optimizer steps taken."""
        self.losses: list[float] = []
        """The training loss of every batch so far."""
        self._fitting: Iterator[None] | None = None
        self._scheduler: Any = None
        self._position = (0, 0)
        """(epoch, batches of it done): where the fit is."""
        self._logged = 0
        """The losses up to this index have been reported."""
        self._resumed: dict[str, Any] | None = None

    @property
    def model(self):
        """The trained language model (unwrapped)."""
        return self.accelerator.unwrap_model(self.lm)

    def _batches(self, samples: Sequence[Sample], shuffle: bool, seed: int) -> list[dict[str, torch.Tensor]]:
        pairs = [(s.prompt_or_input_text, ref) for s in samples for ref in s.references]
        if shuffle:
            random.Random(seed).shuffle(pairs)
        size = self.args.per_device_train_batch_size
        return [
            encode_pairs(
                self.tokenizer,
                self.model_type,
                pairs[i : i + size],
                self.max_prompt_length,
                self.max_target_length,
                self.truncation_side,
            )
            for i in range(0, len(pairs), size)
        ]

    def _batch_count(self, samples: Sequence[Sample]) -> int:
        """Batches per epoch."""
        pairs = sum(len(sample.references) for sample in samples)
        return math.ceil(pairs / self.args.per_device_train_batch_size)

    def n_steps(self, samples: Sequence[Sample]) -> int:
        """The optimizer steps of a fit on ``samples``: each epoch's batches (the last epoch's
        share of a fractional ``num_train_epochs``) in accumulations, its last one partial."""
        per_epoch, accumulation = self._batch_count(samples), self.args.gradient_accumulation_steps
        left, steps = math.ceil(per_epoch * self.args.num_train_epochs), 0
        while left > 0:
            steps += math.ceil(min(per_epoch, left) / accumulation)
            left -= per_epoch
        return steps

    def _loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = {k: v.to(self.accelerator.device) for k, v in batch.items()}
        if self.model_type == "causal":
            return causal_loss(self.lm, batch, self.precision)
        with self.precision.autocast():
            return self.lm(**batch).loss  # computed from float32 logits (transformers upcasts them)

    def _clip(self) -> None:
        self.accelerator.clip_grad_norm_(self.lm.parameters(), self.args.max_grad_norm)

    @torch.no_grad()
    def validation_loss(self, samples: Sequence[Sample]) -> float:
        """Mean token cross-entropy on ``samples``'s references."""
        self.lm.eval()
        losses = [float(self._loss(b)) for b in self._batches(samples, shuffle=False, seed=0)]
        self.lm.train()
        return sum(losses) / len(losses)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of a fit under way (``rl/checkpoint.py``, beside the iteration
        and the random states): the trained weights, the optimizer's and the learning-rate
        schedule's states, where in which epoch it is, every batch's loss so far and how many of them
        were reported."""
        return {
            "policy": trained_state(self.model, frozen_names(self.model)),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self._scheduler.state_dict(),
            "position": list(self._position),
            "losses": list(self.losses),
            "logged": self._logged,
            **({"grad_scaler": self.scaler.state_dict()} if self.scaler else {}),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned; the fit goes on from its batch at the next step."""
        load_trained_state(self.model, state["policy"], frozen_names(self.model))
        self.losses = list(state["losses"])
        self._logged = state.get("logged", len(self.losses))  # checkpoints were saved on log only
        if self.scaler:
            self.scaler.load_state_dict(state["grad_scaler"])
        self._resumed = state

    def step(self, pool: Sequence[Sample], rng: random.Random) -> dict[str, float]:
        """Optimizer steps on ``pool``'s references (the same pool at every call) up to the next
        multiple of ``logging_steps`` or ``save_steps``, or the fit's end; at a multiple of
        ``logging_steps`` returns the mean loss of the batches since the last report as
        ``train/loss`` (a last, shorter period is not reported, as in HF Trainer)."""
        if self._fitting is None:
            self._fitting = self._fit(pool)
        self.lm.train()
        for _ in self._fitting:
            if self.iteration % self.args.logging_steps == 0:
                period, self._logged = self.losses[self._logged :], len(self.losses)
                mean = sum(period) / len(period)
                log.info("supervised: optimizer step %d, loss %.4f", self.iteration, mean)
                return {"train/loss": mean}
            if self.iteration % self.args.checkpoint_every == 0:
                return {}  # a pause for the checkpoint
        return {}

    def _fit(self, samples: Sequence[Sample]) -> Iterator[None]:
        """The fit for ``num_train_epochs``, paused after each optimizer step."""
        from transformers import get_scheduler

        epochs = self.args.num_train_epochs
        batches_per_epoch = self._batch_count(samples)
        total = max(1, math.ceil(batches_per_epoch * epochs / self.args.gradient_accumulation_steps))
        self._scheduler = scheduler = get_scheduler(
            self.args.lr_scheduler_type,
            self.optimizer,
            num_warmup_steps=self.args.warmup_steps,
            num_training_steps=total,
        )
        start = (0, 0)
        if self._resumed is not None:  # from a checkpoint: the optimizer (its learning rate too, which
            # making the schedule reset), the schedule and the batch to go on from
            self.optimizer.load_state_dict(self._resumed["optimizer"])
            scheduler.load_state_dict(self._resumed["scheduler"])
            start = tuple(self._resumed["position"])
        steps_left = math.ceil(batches_per_epoch * epochs) - start[0] * batches_per_epoch - start[1]
        with tqdm(total=steps_left, desc="supervised", unit="batch", leave=False) as bar:
            for epoch in range(start[0], math.ceil(epochs)):
                for number, batch in enumerate(self._batches(samples, shuffle=True, seed=self.seed + epoch)):
                    if epoch == start[0] and number < start[1]:
                        continue  # done before the checkpoint
                    if steps_left == 0:
                        break
                    loss = self._loss(batch) / self.args.gradient_accumulation_steps
                    self.accelerator.backward(scaled(loss, self.scaler))
                    self.losses.append(float(loss.detach()) * self.args.gradient_accumulation_steps)
                    steps_left -= 1
                    self._position = (epoch, number + 1)
                    bar.update(1)
                    bar.set_postfix(loss=f"{self.losses[-1]:.3f}")
                    # the epoch's last, partial accumulation is stepped too (Hugging Face
                    # Trainer's rule): no gradient is dropped or carried into the next epoch
                    last = number + 1 == batches_per_epoch or steps_left == 0
                    if (number + 1) % self.args.gradient_accumulation_steps == 0 or last:
                        optimizer_step(self.optimizer, self.scaler, self._clip)
                        scheduler.step()
                        self.optimizer.zero_grad()
                        self.iteration += 1
                        yield
