"""GRUE Bench: RL fine-tuning of language models on natural-language generation, benchmarked."""

__version__ = "0.1.0"
