"""IWSLT 2017: English source -> German reference; the crowd form's view of a sample."""


def from_hub(row: dict, index: int) -> dict:
    pair = row["translation"]
    return {"id": f"iwslt2017_en_de-{index}", "prompt": pair["en"], "references": [pair["de"]]}


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the English sentence."""
    return [{"name": "source", "label": "English sentence", "text": prompt}]


def copy_floor(row: dict) -> str:
    """The floor:copy output: the English source itself."""
    return row["prompt"]
