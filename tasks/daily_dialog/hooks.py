"""DailyDialog: one sample per reply turn, the previous (at most 5) turns as the prompt; the crowd
form's view of a sample."""

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


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the conversation, one turn a line, the response being A's."""
    turns = [turn.strip() for turn in prompt.split("<EOU>") if turn.strip()]
    # The speakers alternate back from B's last turn.
    speakers = ["B" if (len(turns) - index) % 2 else "A" for index in range(len(turns))]
    history = "\n".join(f"{speaker}: {turn}" for speaker, turn in zip(speakers, turns, strict=True))
    return [{"name": "history", "label": "Conversation so far", "text": history}]


def copy_floor(row: dict) -> str:
    """The floor:copy output: the conversation's last utterance."""
    turns = [turn.strip() for turn in row["prompt"].split("<EOU>") if turn.strip()]
    return turns[-1] if turns else ""
