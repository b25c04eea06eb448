"""Reinforcement learning for language models: policies, rollouts and one file per algorithm."""
