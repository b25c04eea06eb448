"""CommonGen: GEM's common_gen rows -> concept-set samples (all references of the set)."""


def from_hub(row: dict, index: int) -> dict:
    references = [r for r in row.get("references") or [] if r] or [row["target"]]
    return {
        "id": f"commongen-{row.get('concept_set_id', index)}-{index}",
        "prompt": " ".join(row["concepts"]),
        "references": references,
        "meta": {"concepts": list(row["concepts"])},
    }
