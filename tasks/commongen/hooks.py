"""CommonGen: GEM's common_gen rows -> concept-set samples (all references of the set); the crowd
form's view of a sample."""


def from_hub(row: dict, index: int) -> dict:
    references = [r for r in row.get("references") or [] if r] or [row["target"]]
    return {
        "id": f"commongen-{row.get('concept_set_id', index)}-{index}",
        "prompt": " ".join(row["concepts"]),
        "references": references,
        "meta": {"concepts": list(row["concepts"])},
    }


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the concepts."""
    concepts = meta.get("concepts") or prompt.split()
    return [{"name": "concepts", "label": "Concepts", "text": ", ".join(concepts)}]


def copy_floor(row: dict) -> str:
    """The floor:copy output: the concepts, space-separated."""
    return " ".join((row.get("meta") or {}).get("concepts") or row["prompt"].split())
