"""A key/value cache that grows in place and, in a beam search, leaves its prompt where it is.

transformers' ``DynamicLayer`` appends each step's keys and values with ``torch.cat`` (a copy of
the whole cache) and, between beam-search steps, reorders every beam's cache with
``index_select`` (another). With a long prompt that is most of what a step moves: NarrativeQA's
beam search of 4 over 500-token prompts spent a fifth of its time in the two (benchmarks/README.md).

Here each layer writes into a buffer that has room for the new tokens and hands attention views of
its filled part (the sampler's and ``generate``'s caches); and a beam search's reorder moves only
the positions after the prompt. The prompt's keys and values are the same for every beam of a
prompt (``generate`` fills them once and repeats them, ``rollout._prompt_cache_for``), and beam
search only ever reorders beams within their prompt, so reordering the prompt's part would copy
equal values onto each other. Attention reads the same numbers from a view as from the
concatenated copy: the tokens, log-probs and beam scores are ``DynamicLayer``'s bit for bit
(``tests/rl/test_preallocated_cache.py``).
"""

from __future__ import annotations

import torch

try:
    from transformers.cache_utils import DynamicLayer
except ImportError:  # transformers before 4.54 keeps a cache in lists, not layers: its own beam search
    DynamicLayer = object


class PreallocatedLayer(DynamicLayer):
    """A ``DynamicLayer`` over buffers with room for ``room`` more positions; positions before
    ``shared`` (the prompt's) are equal across the beams of a prompt and are not reordered."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
        super().__init__()
        self.device = keys.device
        self.is_initialized = True
        self.shared = keys.size(-2)
        self._keys = _with_room(keys, room)
        self._values = _with_room(values, room)
        self._expose(self.shared)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        length, new = self.get_seq_length(), key_states.size(-2)
        if length + new > self._keys.size(-2):  # past the room asked for: grow, as cat would
            self._keys = _with_room(self.keys, max(new, self._keys.size(-2)))
            self._values = _with_room(self.values, max(new, self._values.size(-2)))
        self._keys[..., length : length + new, :] = key_states
        self._values[..., length : length + new, :] = value_states
        self._expose(length + new)
        return self.keys, self.values

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        length = self.get_seq_length()
        if length > self.shared:
            index = beam_idx.to(self.device)
            for buffer in (self._keys, self._values):
                part = buffer[..., self.shared : length, :]
                part.copy_(part.index_select(0, index))

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)  # keys and values become shorter views of the buffers
        self.shared = min(self.shared, self.get_seq_length())

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("a prompt's cache is repeated for its beams before it is preallocated")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise NotImplementedError("a beam search's cache keeps every beam")

    def _expose(self, length: int) -> None:
        self.keys = self._keys[..., :length, :]
        self.values = self._values[..., :length, :]


def _with_room(states: torch.Tensor, room: int) -> torch.Tensor:
    """A buffer holding ``states`` along its positions, with ``room`` positions free after them."""
    batch, heads, length, dim = states.shape
    buffer = states.new_empty(batch, heads, length + room, dim)
    buffer[..., :length, :] = states
    return buffer


def preallocate(cache, room: int) -> None:
    """Give ``cache``'s filled ``DynamicLayer``s (a prompt's keys and values, repeated for its
    beams where it has beams) ``PreallocatedLayer``s with ``room`` positions for the tokens to come."""
    for i, layer in enumerate(getattr(cache, "layers", ())):
        if type(layer) is DynamicLayer and layer.keys is not None and layer.keys.numel():
            cache.layers[i] = PreallocatedLayer(layer.keys, layer.values, room)
