"""Reading back what an offline W&B run logged, from its ``run-<id>.wandb`` file.

W&B writes the file in LevelDB's log format (blocks of 32 KiB; each record split into chunks with
a 7-byte header: checksum, length, kind) after a 7-byte W&B header; each record is a protobuf
``Record``. wandb no longer ships a Python reader, so the tests read it here.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
HEADER = struct.Struct("<IHB")  # checksum, length, kind
FULL, LAST = 1, 4


def records(path: Path) -> list[Any]:
    """Every protobuf record of a ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", path
    position, chunks, parsed = 7, [], []
    while position + HEADER.size <= len(data):
        left = BLOCK - position % BLOCK
        if left < HEADER.size:  # a block's tail too short for a header is padding
            position += left
            continue
        _, length, kind = HEADER.unpack_from(data, position)
        if kind == 0:  # zeros: the rest of the block is padding
            position += left
            continue
        start = position + HEADER.size
        chunks.append(data[start : start + length])
        position = start + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(chunks))
            parsed.append(record)
            chunks = []
    return parsed


def offline_run(path: Path) -> dict[str, Any]:
    """An offline run's name, tags, config, exit code and history rows."""
    run: dict[str, Any] = {"history": []}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run["name"] = record.run.display_name
            run["group"] = record.run.run_group
            run["tags"] = list(record.run.tags)
            run["config"] = {item.key: json.loads(item.value_json) for item in record.run.config.update}
        elif kind == "history":
            row = {
                "/".join(item.nested_key) or item.key: json.loads(item.value_json)
                for item in record.history.item
            }
            run["history"].append(row)
        elif kind == "exit":
            run["exit_code"] = record.exit.exit_code
    return run
