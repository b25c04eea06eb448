"""The SQLite results store: every run, curve, metric, generation and crowd rating of the benchmark."""

from grue_bench.store.crowd import CrowdBatch, CrowdItem, HumanRating
from grue_bench.store.db import Store
from grue_bench.store.provenance import environment_info, git_commit
from grue_bench.store.rows import BEFORE_TRAINING, Generation
from grue_bench.store.runs import DONE, RunRecord, run_key
from grue_bench.store.schema import SCHEMA_VERSION

__all__ = [
    "BEFORE_TRAINING",
    "DONE",
    "SCHEMA_VERSION",
    "CrowdBatch",
    "CrowdItem",
    "Generation",
    "HumanRating",
    "RunRecord",
    "Store",
    "environment_info",
    "git_commit",
    "run_key",
]
