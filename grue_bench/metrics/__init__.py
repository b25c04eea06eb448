"""Evaluation metrics; each returns per-sample scores and a corpus score."""
