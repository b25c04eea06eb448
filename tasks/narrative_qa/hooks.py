"""NarrativeQA: question + story summary -> the human answers; the crowd form's view of a sample."""

import re


def from_hub(row: dict, index: int) -> dict:
    question = row["question"]["text"]
    summary = row["document"]["summary"]["text"]
    return {
        "id": f"narrative_qa-{row['document']['id']}-{index}",
        "prompt": f"question: {question} context: {summary}",
        "references": [answer["text"] for answer in row["answers"]],
        "meta": {"question": question, "summary": summary},
    }


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the story summary and the question."""
    question, summary = meta.get("question"), meta.get("summary")
    if not (question and summary):  # not from the shipped data: split the formatted prompt
        match = re.match(r"question:\s*(.*?)\s*context:\s*(.*)", prompt, re.DOTALL)
        question, summary = match.groups() if match else ("", prompt)
    return [
        {"name": "summary", "label": "Story summary", "text": summary},
        {"name": "question", "label": "Question", "text": question},
    ]


def copy_floor(row: dict) -> str:
    """The floor:copy output: the question."""
    question = (row.get("meta") or {}).get("question")
    if question:
        return question
    match = re.match(r"question:\s*(.*?)\s*context:", row["prompt"], re.DOTALL)
    return match.group(1) if match else row["prompt"]
