"""IWSLT 2017: English source -> German reference."""


def from_hub(row: dict, index: int) -> dict:
    pair = row["translation"]
    return {"id": f"iwslt2017_en_de-{index}", "prompt": pair["en"], "references": [pair["de"]]}
