"""A run's status vocabulary and its one mapping.

How LangGraph's outcome of a run (the thread's state after it, the error it raised, the cancel that
stopped it) reads as the thread's status, as the HTTP run's status and as the HTTP thread's status.

Every writer and reader of a status maps it here: `run_record`, the HTTP executor,
`thread_meta` (a run whose process died) and the run store.
"""

from __future__ import annotations

from typing import Any, Literal

from graphwright.results import RunStatus, ThreadStatus

# The Agent Server's words, which the HTTP service speaks (`server.schemas` uses these).
HttpRunStatus = Literal["pending", "running", "success", "error", "interrupted", "timeout"]
HttpThreadStatus = Literal["idle", "busy", "interrupted", "error"]

__all__ = [
    "HTTP_OF_THREAD",
    "RUN_OF_THREAD",
    "TERMINAL",
    "HttpRunStatus",
    "HttpThreadStatus",
    "RunStatus",
    "ThreadStatus",
    "as_read",
    "ended",
    "http_end",
    "remembers",
    "settled",
]

Cancel = Literal["interrupt", "rollback"]
TERMINAL: frozenset[HttpRunStatus] = frozenset({"success", "error", "interrupted", "timeout"})
RUN_OF_THREAD: dict[str, HttpRunStatus] = {  # an ended run's HTTP status from its thread's
    "completed": "success",
    "stopped": "success",
    "interrupted": "interrupted",
    "failed": "error",
}
HTTP_OF_THREAD: dict[str, HttpThreadStatus] = {  # what the Agent Server's API calls it
    "running": "busy",
    "interrupted": "interrupted",
    "failed": "error",
    "completed": "idle",
    "stopped": "idle",
    "": "idle",
}


def ended(
    snapshot: Any, error: str | None, *, paused: bool = False
) -> tuple[RunStatus, str | None]:
    """How the run ended, read from the thread's state after it (and the error, if any).

    A run left with nodes to run and no interrupt stopped early (`failed`), unless it
    was asked to pause there (`paused`: an HTTP run's `interrupt_before`/`after`).
    """
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    if error:
        return "failed", error
    if snapshot.interrupts or (snapshot.next and paused):
        return "interrupted", None
    if snapshot.next:
        return "failed", f"the run stopped before {list(snapshot.next)}"
    return by_stop_reason(values.get("stop_reason")), None


def unfinished(snapshot: Any) -> bool:
    """Whether the thread's last step is not over: nodes to run, or tasks that saved their writes.

    LangGraph leaves a task whose writes are saved out of `next`; when a process dies after every
    task of a step saved its writes but before the step's checkpoint, `next` is empty although
    the run is not over (resume applies those writes and goes on).
    """
    return bool(snapshot.next or snapshot.tasks)


def by_stop_reason(stop_reason: Any) -> RunStatus:
    """A run that ran to its end: `completed` when it answered, else `stopped`."""
    return "completed" if stop_reason in (None, "answered") else "stopped"


def remembers(status: RunStatus | ThreadStatus) -> bool:
    """Whether a run that ended so stores what its user asked to remember.

    It ran to its end (`completed`, or `stopped` by a budget), not failed, interrupted or waiting.
    """
    return status in ("completed", "stopped")


def http_end(
    snapshot: Any, error: BaseException | None, cancel: str | None
) -> tuple[HttpRunStatus, ThreadStatus]:
    """An HTTP run's status and its thread's, as the reference records them.

    A run that stops at an interrupt succeeded (its thread waits); a cancelled one is `interrupted`
    (its thread too, unless rolled back).
    """
    if error is not None:
        return "error", "failed"
    if cancel is not None:
        return "interrupted", "interrupted" if cancel == "interrupt" else "completed"
    return "success", ended(snapshot, None, paused=True)[0]  # paused: never "failed" here


def as_read(recorded: str | None, alive: bool) -> Any:
    """The thread's status as read.

    `recorded`, but a `running` that no process holds (`alive`) is `failed`: its process died
    mid-step, and resume continues it.
    """
    return "failed" if recorded == "running" and not alive else recorded


def settled(
    recorded: str | None, alive: bool, *, next: list[str], interrupted: bool, stop_reason: Any
) -> Any:
    """The thread's status as read.

    `recorded` unless it says `running` while no process holds the thread (`alive`). Such a run died
    mid-step (`failed`: resume continues it) or after its last step (how that step ended).
    """
    if recorded != "running" or alive or next:
        return as_read(recorded, alive)
    if interrupted:
        return "interrupted"
    if stop_reason is None:
        return "failed"
    return by_stop_reason(stop_reason)
