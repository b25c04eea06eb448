"""Offline assets built from local files (no downloads), e.g. WordNet for METEOR."""
