"""Text classifiers for the learned metrics: offline ones trained on shipped data, or hub models."""
