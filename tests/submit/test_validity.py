"""docs/METRICS.md is what `python -m grue_bench.submit.validity` writes today."""

from grue_bench.submit.validity import DOC, render


def test_the_shipped_metric_validity_table_is_current(sentiment_judge, act_judge):
    text = render()
    assert DOC.read_text(encoding="utf-8") == text, "regenerate it: python -m grue_bench.submit.validity"
    assert "| `imdb_sentiment@2` |" in text and "| `daily_dialog_intent@2` |" in text
    assert "| daily_dialog | `intent/accuracy` |" in text
