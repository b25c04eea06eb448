"""A model's key/value cache in and out, whatever the transformers version.

transformers 5.24 renamed ``past_key_values`` to ``cache``, as a forward keyword and as an output
field (the old names are deprecated there and go in 5.40, after which a wrapper passing ``**kwargs``
through would drop the old keyword unread and decode every step without the prompt). Calls that
pass a cache ask ``cache_keyword`` which name to use, and read it back with ``returned_cache``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

KEYWORDS = ("cache", "past_key_values")
"""The names, newest first."""


def cache_keyword(lm: Any) -> str:
    """The name ``lm``'s forward takes a key/value cache by. Wrappers whose forward only passes
    ``**kwargs`` on (PEFT, DistributedDataParallel) are looked through to the model they wrap:
    the first module (``lm`` itself, then its submodules) whose forward names one."""
    for module in lm.modules():
        keyword = _named_keyword(type(module))
        if keyword is not None:
            return keyword
    raise TypeError(f"{type(lm).__name__} takes no key/value cache (neither of {', '.join(KEYWORDS)})")


@functools.cache
def _named_keyword(module_type: type) -> str | None:
    parameters = inspect.signature(module_type.forward).parameters
    return next((keyword for keyword in KEYWORDS if keyword in parameters), None)


def returned_cache(out: Any) -> Any:
    """The key/value cache a forward returned (its output's ``cache``, or ``past_key_values``
    before transformers 5.24)."""
    return getattr(out, _cache_field(type(out)))


@functools.cache
def _cache_field(output_type: type) -> str:
    fields = {field.name for field in dataclasses.fields(output_type)}
    return next((name for name in KEYWORDS if name in fields), KEYWORDS[-1])
