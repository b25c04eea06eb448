"""How a task's small-profile prompt format was chosen: SmolLM2-135M-Instruct's zero-shot scores on
the validation split under each candidate format (run by hand, not a test; validation only).

    python benchmarks/zero_shot_formats.py --task commongen

Each candidate is a prompt prefix and suffix around the task's input (the small profile's
``datapool.args.prompt_prefix`` / ``prompt_suffix``): plain text, and the model's chat format
with and without its default system message; NarrativeQA's also lay the input out with the
question first (RL4LMs's) or last (``datapool.args.prompt_template``). The evaluation is the one
a run of the small profile makes of its base model (its decoding, batch size and precision, the
task's metric suite). One JSON line per candidate: its metrics, mean output words, the share of
empty outputs and seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

USER, ASSISTANT = "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"
SYSTEM = (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
)
"""SmolLM2-Instruct's chat template: its default system message, a user turn, the assistant's."""

INSTRUCTIONS = {
    "commongen": (
        "Write one sentence about an everyday scene that uses all of these words: ",
        ".",
        "Sentence:",
    ),
    "iwslt2017_en_de": ("Translate this English sentence into German: ", "", "German:"),
    "cnn_dailymail": ("Summarize this news article in a few sentences:\n", "", "Summary:"),
    "totto": ("Describe the highlighted cells of this table in one sentence:\n", "", "Sentence:"),
    "narrative_qa": ("Answer the question about the story in a few words.\n", "", "Answer:"),
}
"""Per task: the instruction before its input, what ends the input (CommonGen's concepts have no
full stop of their own), and the label a plain-text prompt ends with."""


QUESTION_FIRST = {"prompt_template": None, "max_input_words": 300}
"""NarrativeQA's input laid out as RL4LMs does ("question: ... context: ..."), cut after 300 words."""
QUESTION_LAST = {"prompt_template": "Story: {summary}\nQuestion: {question}", "max_input_words": 290}
"""The story first, cut after 290 words, then the question."""


def candidates(task: str) -> dict[str, dict[str, Any]]:
    """Name -> the datapool arguments (prompt prefix and suffix; NarrativeQA: and its layout) of the
    formats tried for ``task``."""
    instruction, end, label = INSTRUCTIONS[task]
    formats: dict[str, dict[str, Any]] = {
        "plain": {"prompt_prefix": instruction, "prompt_suffix": f"{end}\n{label}"},
        "chat": {"prompt_prefix": USER + instruction, "prompt_suffix": end + ASSISTANT},
        "chat+system": {"prompt_prefix": SYSTEM + USER + instruction, "prompt_suffix": end + ASSISTANT},
    }
    if task != "narrative_qa":
        return formats
    question_first = {name: {**args, **QUESTION_FIRST} for name, args in formats.items()}
    return {**question_first, "chat+system+question-last": {**formats["chat+system"], **QUESTION_LAST}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="commongen", choices=sorted(INSTRUCTIONS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--formats", help="only these candidates, comma-separated (default: all)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from grue_bench import plugins
    from grue_bench.resolve import apply_override, build_config, task_config
    from grue_bench.rl.precision import default_device
    from grue_bench.runner.assemble import load_base, load_pool, model_type_of, run_precision
    from grue_bench.runner.evaluator import generate_texts, score_texts

    chosen = candidates(args.task)
    names = args.formats.split(",") if args.formats else list(chosen)
    unknown = [name for name in names if name not in chosen]
    if unknown:
        parser.error(f"--formats: {', '.join(unknown)} not among {args.task}'s: {', '.join(chosen)}")
    configs = {}
    for name in names:
        data = task_config(plugins.TASKS.get(args.task), "ppo", "small")
        for key, value in chosen[name].items():
            apply_override(data, f"datapool.args.{key}={json.dumps(value)}")
        configs[name] = build_config(data, f"the '{name}' format")
    first = next(iter(configs.values()))  # the formats differ in their prompts only
    base, device = load_base(first), default_device()
    lm, tokenizer, model_type = base.model.to(device), base.tokenizer, model_type_of(first)
    precision = run_precision(first, device)
    for name, config in configs.items():
        samples = list(load_pool(config, "validation"))
        started = time.perf_counter()
        texts = generate_texts(lm, tokenizer, model_type, config, samples, "validation", device, precision)
        scores, _ = score_texts(lm, tokenizer, model_type, config, samples, "validation", texts, precision)
        words = [len(text.split()) for text in texts]
        figures = {
            "task": args.task,
            "format": name,
            "precision": precision.name,
            **{key: round(value, 4) for key, value in scores.corpus().items()},
            "mean_words": round(sum(words) / len(words), 2),
            "empty_share": round(sum(w == 0 for w in words) / len(words), 3),
            "example": texts[0],
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
