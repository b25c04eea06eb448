"""Baseline submissions: the folder format, its checks, re-scoring, recording and packaging.

``validate`` (every check, all problems at once) -> ``rescore`` (each task's metric suite, as
``grue eval``) -> ``record`` (one store transaction). ``package`` writes a folder from one's own runs.
"""
