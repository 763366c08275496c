"""A thread's summary, recorded in its meta hash by the run that left it.

`show` reads it without compiling the graph (LangGraph), for as long as the thread's head is the
same.

The record names the head it describes (`graphwright.checkpoints.head`); a thread whose head moved
since (a later step, update or resume) has no valid record, and is read through its graph.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from graphwright.checkpoints.head import Head
from graphwright.nodes.gate_models import GateRequest

FIELD = "summary"  # of the thread's meta hash (sealed: it holds the answer)


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """The graph's view of a checkpoint.

    What is next and what waits, with the answer and stop reason as `jsonable` gives them.
    """

    checkpoint_id: str | None  # None: the thread has no checkpoint (nothing is recorded)
    next: list[str]
    interrupted: bool
    stop_reason: Any
    answer: Any
    pending: GateRequest | None


def encode(summary: Recorded, head: Head | None) -> str:
    """The record of `summary`, read at `head`.

    Empty (no record) unless the head is the summary's checkpoint.
    """
    if head is None or head.checkpoint_id != summary.checkpoint_id:
        return ""
    return json.dumps(
        {
            "checkpoint_id": summary.checkpoint_id,
            "writes": head.writes,
            "next": summary.next,
            "interrupted": summary.interrupted,
            "stop_reason": summary.stop_reason,
            "answer": summary.answer,
            "pending": summary.pending.model_dump(mode="json") if summary.pending else None,
        },
        ensure_ascii=False,
    )


def decode(text: str | None, head: Head | None) -> Recorded | None:
    """The record if it describes `head`, the thread's head now."""
    if not text or head is None:
        return None
    data = json.loads(text)
    if (data["checkpoint_id"], data["writes"]) != (head.checkpoint_id, head.writes):
        return None
    pending = data["pending"]
    return Recorded(
        checkpoint_id=data["checkpoint_id"],
        next=data["next"],
        interrupted=data["interrupted"],
        stop_reason=data["stop_reason"],
        answer=data["answer"],
        pending=GateRequest.model_validate(pending) if pending else None,
    )
