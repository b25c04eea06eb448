"""EvaluateMetric: a local `evaluate` module written by the test; no hub access."""

from pathlib import Path

import pytest

from grue_bench.errors import GrueError
from grue_bench.metrics.hf_evaluate import EvaluateMetric
from grue_bench.plugins.components import build

# A tiny metric: exact-match rate (a single number) and words per prediction (one per sample).
SCRIPT = """
import datasets
import evaluate


class {name}(evaluate.Metric):
    def _info(self):
        references = {references}
        return evaluate.MetricInfo(
            description="test metric",
            citation="",
            inputs_description="",
            features=datasets.Features(
                {{"predictions": datasets.Value("string"), "references": references}}
            ),
        )

    def _compute(self, predictions, references, scale=1.0):
        refs = [r if isinstance(r, list) else [r] for r in references]
        matches = [float(p in r) for p, r in zip(predictions, refs)]
        return {{
            "exact": scale * sum(matches) / len(matches),
            "words": [len(p.split()) for p in predictions],
            "note": "not a number",
        }}
"""


def write_module(root: Path, name: str, references: str) -> Path:
    folder = root / name
    folder.mkdir()
    class_name = name.title().replace("_", "")
    (folder / f"{name}.py").write_text(SCRIPT.format(name=class_name, references=references))
    return folder


@pytest.fixture(scope="module")
def multi_ref(tmp_path_factory: pytest.TempPathFactory) -> Path:
    references = 'datasets.Sequence(datasets.Value("string"))'
    return write_module(tmp_path_factory.mktemp("modules"), "overlap", references)


PREDICTIONS = ["a cat", "the dog barks", "hello"]
REFERENCES = [["a cat", "one cat"], ["a dog barks"], ["hi", "hello"]]


def compute(metric: EvaluateMetric):
    return metric.compute([""] * 3, PREDICTIONS, REFERENCES)


def test_numeric_results_become_keys_with_per_sample_scores(multi_ref: Path):
    # A single number: per-sample scores come from scoring each sample alone.
    assert compute(EvaluateMetric(str(multi_ref))) == {"evaluate/overlap_exact": ([1.0, 0.0, 1.0], 2 / 3)}


def test_a_per_sample_list_and_compute_args(multi_ref: Path):
    words = compute(EvaluateMetric(str(multi_ref), key="words"))
    assert words == {"evaluate/overlap_words": ([2.0, 3.0, 1.0], 2.0)}
    scaled = EvaluateMetric(str(multi_ref), key="exact", compute_args={"scale": 3.0}, per_sample=False)
    assert compute(scaled) == {"evaluate/overlap_exact": (None, 2.0)}


def test_single_reference_modules(tmp_path: Path):
    folder = write_module(tmp_path, "first_ref", 'datasets.Value("string")')
    metric = EvaluateMetric(str(folder), key="exact", single_reference=True)
    assert compute(metric) == {"evaluate/first_ref_exact": ([1.0, 0.0, 0.0], 1 / 3)}


def test_unusable_keys_are_named(multi_ref: Path):
    with pytest.raises(GrueError, match="no result 'missing'") as error:
        compute(EvaluateMetric(str(multi_ref), key="missing"))
    assert "exact, note, words" in str(error.value)
    with pytest.raises(GrueError, match="neither a number"):
        compute(EvaluateMetric(str(multi_ref), key="note"))


def test_a_path_that_does_not_exist_is_refused(tmp_path: Path):
    missing = tmp_path / "no_such_metric"
    with pytest.raises(GrueError, match=r"args\.path: '.*no_such_metric' does not exist") as error:
        build("metrics", "evaluate", {"path": str(missing)}, "args")
    assert "give the path of an existing file or folder" in str(error.value)
    with pytest.raises(GrueError, match="does not exist"):
        build("metrics", "evaluate", {"path": "rouge"}, "args")  # a hub name is never fetched
