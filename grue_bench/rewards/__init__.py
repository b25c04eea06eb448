"""Reward functions: sentence-level scores for RL, computed in batches."""
