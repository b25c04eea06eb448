"""The benchmark runner: tasks x algorithms x seeds, evaluated, stored, resumable."""
