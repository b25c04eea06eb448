"""CNN/DailyMail: article -> highlights."""


def from_hub(row: dict, index: int) -> dict:
    return {"id": f"cnn_dailymail-{row['id']}", "prompt": row["article"], "references": [row["highlights"]]}
