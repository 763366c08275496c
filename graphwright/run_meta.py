"""The run's record in its thread's meta hash, written here only.

Its status, graph, where its usage counts from, the memories it notes, and the `show` summary it
leaves.

Every run, from the Python API, the CLI or the HTTP service, writes these fields through
this module, and every write carries the run's lock fence (a run that lost the thread
writes nothing). `ThreadMeta.write` (blocking) and `RunWrites.write` (the run loop's, one
fenced script per write) are the storage under it; `tests/repo/test_one_lifecycle` checks
no other module writes these fields.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langgraph.types import StateSnapshot

from graphwright import summary
from graphwright.checkpoints.direct import Command
from graphwright.checkpoints.head import Head
from graphwright.locking import ThreadLock
from graphwright.nodes.gate_models import GateRequest
from graphwright.results import ThreadStatus
from graphwright.run_writes import Event, RunWrites
from graphwright.serialize import jsonable
from graphwright.summary import Recorded
from graphwright.thread_meta import ThreadMeta

MODEL_FAILED = "model_failed"  # the checkpoint whose step the model failed, or ""
# The meta fields that describe the thread's run (the rest is the thread's own: its
# user metadata, TTL, times): the evidence test looks for writes of these.
RUN_FIELDS = frozenset(
    {"status", "graph", "trace_from", MODEL_FAILED, summary.FIELD, "user_id", "remember"}
)
Fence = int | None


def settled(
    meta: ThreadMeta, thread_id: str, fence: Fence, status: ThreadStatus, graph: str = ""
) -> None:
    """The thread's status found anew outside a run.

    A state update (which names the graph it runs) or a run whose process died after its last step.
    """
    fields = {"graph": graph, "thread_id": thread_id} if graph else {}
    meta.write(thread_id, fence, status=status, **fields)


async def anoted(
    writes: RunWrites,
    thread_id: str,
    fence: Fence,
    user_id: str,
    messages: list[dict[str, Any]],
) -> None:
    """The run's own user messages, kept until it ends, for what they ask to remember."""
    await writes.write(thread_id, fence, noting(user_id, messages))


async def aremembered(writes: RunWrites, thread_id: str, fence: Fence) -> None:
    """The noted messages were taken (before any memory is written from them)."""
    await writes.write(thread_id, fence, {"remember": ""})


def noting(user_id: str, messages: list[dict[str, Any]]) -> dict[str, str]:
    """The fields of `noted`, for `astarted` to write with the run's start."""
    return {"user_id": user_id, "remember": json.dumps(messages)}


async def astarted(
    writes: RunWrites,
    thread_id: str,
    fence: Fence,
    graph: str,
    start: dict[str, Any],
    *,
    counts: bool,
    note: dict[str, str] | None = None,
    was: str | None = None,
) -> str:
    """The run holds the thread: `running` its graph, with its `run_start` trace event (`start`).

    One fenced write on the run loop. `counts`: the thread's usage counts from the event (a new
    input restarts it, in `trace_from`); `note`: `noting`'s fields; `was`: the
    status the run's lock found (`RunWrites.write`). Returns the event's entry id.
    """
    fields, event = _start(thread_id, graph, start, counts, note)
    entry, _ = await writes.write(thread_id, fence, fields, event=event, was=was)
    return entry


def started_with_lock(
    writes: RunWrites,
    thread_id: str,
    owner_id: str,
    graph: str,
    start: dict[str, Any],
    *,
    note: dict[str, str] | None = None,
) -> Command:
    """`astarted`'s write of a run on a new thread, as a command to send with its lock.

    Written for the lock's holder `owner_id`; `RunWrites.written` reads its reply.
    """
    fields, event = _start(thread_id, graph, start, True, note)
    return writes.owned(thread_id, owner_id, fields, event=event)


def _start(
    thread_id: str, graph: str, start: dict[str, Any], counts: bool, note: dict[str, str] | None
) -> tuple[dict[str, str], Event]:
    event = Event(kind="run_start", fields=start, id_field="trace_from" if counts else "")
    fields = {"graph": graph, "status": "running", "thread_id": thread_id, **(note or {})}
    return fields, event


async def afailed(writes: RunWrites, thread_id: str, fence: Fence) -> None:
    """The run failed before it had a result (its graph, its factory, our own error)."""
    await writes.write(thread_id, fence, {"status": "failed"})


async def asettled(writes: RunWrites, thread_id: str, fence: Fence, status: ThreadStatus) -> None:
    """`settled`, its status only, on the run loop."""
    await writes.write(thread_id, fence, {"status": status})


async def aended(
    writes: RunWrites,
    thread_id: str,
    status: ThreadStatus,
    snapshot: StateSnapshot,
    head: Head | None,
    *,
    lock: ThreadLock | None,
    gate: GateRequest | None = None,
    model_failed: bool = False,
    reads: Sequence[Command] = (),
    release: bool = True,
) -> list[Any]:
    """The run's end, written last: its status and the `show` summary of the state it left.

    The lock is given back in the same write; `head` is the thread's head, read already. A run
    the model failed names its checkpoint in `MODEL_FAILED`: the next turn may start over that
    unfinished step (a model call has no effect to lose).

    `reads` (commands) go in its round trip, before it; returns their replies. Without
    `release` the lock stays held (an HTTP run gives it back with its record's end).
    """
    fence = lock.fence if lock is not None else None
    fields = {
        "status": status,
        MODEL_FAILED: checkpoint_of(snapshot) if model_failed else "",
        summary.FIELD: summary.encode(summary_of(snapshot, gate), head),
    }
    releasing = lock if release else None
    if releasing is not None:
        releasing.renewal_stop.set()  # the write deletes the lock: no renewal may find it gone
    # Its start wrote `running` under the same fence: no other status since.
    _, replies = await writes.write(
        thread_id, fence, fields, release=releasing, was="running", reads=reads
    )
    return replies


def checkpoint_of(snapshot: StateSnapshot) -> str:
    """The checkpoint id a snapshot's config names (empty if none)."""
    return str((snapshot.config.get("configurable") or {}).get("checkpoint_id") or "")


def summary_of(snapshot: StateSnapshot, gate: GateRequest | None) -> Recorded:
    """What `show` prints of the thread, as `Orchestrator.state` reads it."""
    values = jsonable(snapshot.values) if isinstance(snapshot.values, dict) else {}
    return Recorded(
        checkpoint_id=(snapshot.config.get("configurable") or {}).get("checkpoint_id"),
        next=list(snapshot.next),
        interrupted=bool(snapshot.interrupts),
        stop_reason=values.get("stop_reason"),
        answer=values.get("answer"),
        pending=gate,
    )
