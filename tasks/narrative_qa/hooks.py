"""NarrativeQA: question + story summary -> the human answers."""


def from_hub(row: dict, index: int) -> dict:
    question = row["question"]["text"]
    summary = row["document"]["summary"]["text"]
    return {
        "id": f"narrative_qa-{row['document']['id']}-{index}",
        "prompt": f"question: {question} context: {summary}",
        "references": [answer["text"] for answer in row["answers"]],
        "meta": {"question": question, "summary": summary},
    }
