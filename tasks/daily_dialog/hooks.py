"""DailyDialog: one sample per reply turn, the previous (at most 5) turns as the prompt."""

CONTEXT_SIZE = 5
EOU = " <EOU> "


def from_hub(row: dict, index: int) -> list[dict]:
    turns = [turn.strip() for turn in row["dialog"]]
    samples = []
    for turn in range(1, len(turns)):
        samples.append(
            {
                "id": f"daily_dialog-{index}-{turn}",
                "prompt": EOU.join(turns[max(0, turn - CONTEXT_SIZE) : turn]),
                "references": [turns[turn]],
                "meta": {"response_act": row["act"][turn], "response_emotion": row["emotion"][turn]},
            }
        )
    return samples
