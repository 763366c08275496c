"""SDK call sequences for the differential protocol test, each written once and run against
`langgraph dev` (the reference) and `graphwright serve`. A scenario records, per call,
what a client can tell apart: success or the failure class, statuses, the event names of a
stream with each event's data, and whole JSON bodies, ids and times masked
(tests/support/differential.py `mask`): the test compares them key by key in both directions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
from langgraph_sdk.client import SyncLangGraphClient

from tests.support.differential import mask

Observation = tuple[str, Any]
NAMESPACE = re.compile(r"(\w+):[0-9a-f-]{36}")
STEPS: dict[str, Any] = {"steps": []}
HI = {"messages": [{"role": "user", "content": "hi"}]}
BLOCKS = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}


class Recorder:
    """Collects the observations of one scenario."""

    def __init__(self, client: SyncLangGraphClient) -> None:
        self.c = client
        self.seen: list[Observation] = []

    def call(self, label: str, fn: Callable[[], Any]) -> Any:
        try:
            result = fn()
        except httpx.HTTPStatusError as exc:
            self.seen.append((label, f"http {exc.response.status_code}"))
            return None
        except Exception as exc:  # the SDK raises plain exceptions for run errors
            self.seen.append((label, f"raised {type(exc).__name__}"))
            return None
        self.seen.append((label, plain(result)))
        return result

    def stream(self, label: str, fn: Callable[[], Any]) -> list[Any]:
        parts: list[Any] = []
        try:
            for part in fn():
                parts.append(part)
        except httpx.HTTPStatusError as exc:
            self.seen.append((label, f"http {exc.response.status_code}"))
            return parts
        self.seen.append((label, [[NAMESPACE.sub(r"\1:*", p.event), plain(p.data)] for p in parts]))
        return parts

    def note(self, label: str, value: Any) -> None:
        self.seen.append((label, value))


def plain(value: Any) -> Any:
    """A body as JSON data with ids and times masked."""
    return mask(json.loads(json.dumps(value, default=str)))


def status_of(r: Recorder, label: str, tid: str, rid: str | None = None) -> None:
    if rid is None:
        r.note(label, r.c.threads.get(tid)["status"])
    else:
        r.note(label, r.c.runs.get(tid, rid)["status"])


def interrupt_and_resume(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    r.call("wait until the interrupt", lambda: r.c.runs.wait(tid, "interrupting", input=STEPS))
    status_of(r, "thread status at the interrupt", tid)
    r.call("state at the interrupt", lambda: r.c.threads.get_state(tid))
    r.call(
        "resume with a command",
        lambda: r.c.runs.wait(tid, "interrupting", command={"resume": "yes"}),
    )
    status_of(r, "thread status after resume", tid)
    runs = r.c.runs.list(tid)
    r.note("run statuses", [x["status"] for x in runs])
    r.call("run body", lambda: r.c.runs.get(tid, runs[0]["run_id"]))


def stream_modes(
    graph: str,
    modes: list[str],
    payload: dict[str, Any],
    subgraphs: bool = False,
) -> Callable[[Recorder], None]:
    def scenario(r: Recorder) -> None:
        tid = r.c.threads.create()["thread_id"]
        r.stream(
            f"stream {modes}",
            lambda: r.c.runs.stream(
                tid, graph, input=payload, stream_mode=modes, stream_subgraphs=subgraphs
            ),
        )  # type: ignore[arg-type]
        status_of(r, "thread status", tid)

    return scenario


def interrupt_streams(r: Recorder) -> None:
    for modes in (["values"], ["updates"], ["values", "updates"]):
        tid = r.c.threads.create()["thread_id"]
        r.stream(
            f"stream {modes} to the interrupt",
            lambda t=tid, m=modes: r.c.runs.stream(t, "interrupting", input=STEPS, stream_mode=m),
        )  # type: ignore[arg-type]
        r.stream(
            f"stream {modes} resume",
            lambda t=tid, m=modes: r.c.runs.stream(
                t, "interrupting", command={"resume": "ok"}, stream_mode=m
            ),
        )  # type: ignore[arg-type]


def raising(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    r.stream("stream a raising graph", lambda: r.c.runs.stream(tid, "raising", input=STEPS))
    runs = r.c.runs.list(tid)
    status_of(r, "run status", tid, runs[0]["run_id"])
    status_of(r, "thread status", tid)
    r.call("wait on a raising graph", lambda: r.c.runs.wait(tid, "raising", input=STEPS))
    run = r.c.runs.create(tid, "raising", input=STEPS)
    r.call("join a raising run", lambda: r.c.runs.join(tid, run["run_id"]))
    status_of(r, "background run status", tid, run["run_id"])


def background(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    run = r.call("create", lambda: r.c.runs.create(tid, "subgraph", input=STEPS))
    r.call("join", lambda: r.c.runs.join(tid, run["run_id"]))
    status_of(r, "run status", tid, run["run_id"])
    r.call("list", lambda: r.c.runs.list(tid))
    r.call("get an unknown run", lambda: r.c.runs.get(tid, "00000000-0000-0000-0000-000000000000"))
    r.call("delete", lambda: r.c.runs.delete(tid, run["run_id"]))
    r.call("get the deleted run", lambda: r.c.runs.get(tid, run["run_id"]))


def threads_on_demand(r: Recorder) -> None:
    fresh = "7f1c0c7e-0000-4000-8000-" + f"{int(time.time() * 1e6) % 10**12:012d}"
    r.call("wait on an unknown thread", lambda: r.c.runs.wait(fresh, "subgraph", input=STEPS))
    r.call(
        "wait with if_not_exists=create",
        lambda: r.c.runs.wait(fresh, "subgraph", input=STEPS, if_not_exists="create"),
    )
    status_of(r, "the created thread", fresh)


def stateless(r: Recorder) -> None:
    r.call("stateless wait", lambda: r.c.runs.wait(None, "subgraph", input=STEPS))
    r.stream(
        "stateless stream",
        lambda: r.c.runs.stream(None, "subgraph", input=STEPS, stream_mode="updates"),
    )
    batch = r.call(
        "create_batch",
        lambda: r.c.runs.create_batch(
            [
                {"assistant_id": "subgraph", "input": STEPS},
                {"assistant_id": "interrupting", "input": STEPS},
            ]
        ),
    )
    r.note("batch size", len(batch or []))


def multitask(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    later = r.c.runs.create(tid, "subgraph", input=STEPS, after_seconds=30)
    r.call(
        "create while a run is pending (reject)",
        lambda: r.c.runs.create(tid, "subgraph", input=STEPS, multitask_strategy="reject"),
    )
    r.call("cancel the pending run", lambda: r.c.runs.cancel(tid, later["run_id"]))
    status_of(r, "the cancelled run", tid, later["run_id"])
    first = r.c.runs.create(tid, "subgraph", input=STEPS, multitask_strategy="enqueue")
    second = r.c.runs.create(tid, "subgraph", input=STEPS, multitask_strategy="enqueue")
    r.call("join the second enqueued run", lambda: r.c.runs.join(tid, second["run_id"]))
    status_of(r, "first enqueued run", tid, first["run_id"])
    status_of(r, "second enqueued run", tid, second["run_id"])
    pending = r.c.runs.create(tid, "subgraph", input=STEPS, after_seconds=30)
    newer = r.c.runs.create(tid, "subgraph", input=STEPS, multitask_strategy="interrupt")
    r.call("join the interrupting run", lambda: r.c.runs.join(tid, newer["run_id"]))
    status_of(r, "the run it interrupted", tid, pending["run_id"])
    held = r.c.runs.create(tid, "subgraph", input=STEPS, after_seconds=30)
    r.call("cancel_many pending", lambda: r.c.runs.cancel_many(thread_id=tid, status="pending"))
    status_of(r, "run cancelled by cancel_many", tid, held["run_id"])


def run_options(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    r.call(
        "interrupt_before",
        lambda: r.c.runs.wait(tid, "subgraph", input=STEPS, interrupt_before=["last"]),
    )
    r.note("next after interrupt_before", r.c.threads.get_state(tid)["next"])
    status_of(r, "thread status after interrupt_before", tid)
    r.call("continue with no input", lambda: r.c.runs.wait(tid, "subgraph", input=None))
    r.note("steps after continuing", r.c.threads.get_state(tid)["values"]["steps"])
    history = r.c.threads.get_history(tid, limit=100)
    fork = next(h for h in history if h["next"] == ["last"])
    r.call(
        "run from an earlier checkpoint",
        lambda: r.c.runs.wait(
            tid, "subgraph", input=None, checkpoint_id=fork["checkpoint"]["checkpoint_id"]
        ),
    )
    r.note("steps after the fork", r.c.threads.get_state(tid)["values"]["steps"])
    other = r.c.threads.create()["thread_id"]
    r.call(
        "interrupt_after",
        lambda: r.c.runs.wait(other, "interrupting", input=STEPS, interrupt_after=["first"]),
    )
    r.note("next after interrupt_after", r.c.threads.get_state(other)["next"])
    r.call("command goto", lambda: r.c.runs.wait(other, "interrupting", command={"goto": "last"}))
    r.note("steps after goto", r.c.threads.get_state(other)["values"]["steps"])
    r.call(
        "command update",
        lambda: r.c.runs.wait(other, "interrupting", command={"update": {"steps": ["edited"]}}),
    )
    r.call(
        "config and durability",
        lambda: r.c.runs.wait(
            r.c.threads.create()["thread_id"],
            "subgraph",
            input=STEPS,
            config={"tags": ["t"], "configurable": {"x": 1}},
            durability="sync",
        ),
    )


def inputs(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    r.call(
        "input of the wrong type",
        lambda: r.c.runs.wait(tid, "subgraph", input={"steps": "not a list"}),
    )
    r.call("content-block messages", lambda: r.c.runs.wait(tid, "chat", input=BLOCKS))


def request_keys(r: Recorder) -> None:
    """What a run's record says of its request: its id from `x-request-id`, and the keys
    only the server sets dropped from the body's config."""
    tid = r.c.threads.create()["thread_id"]
    claimed = {
        "langgraph_auth_user_id": "bob",
        "langgraph_request_id": "mine",
        "x": 1,
        "__after_seconds__": 5,
    }
    run = r.call(
        "create with a request id and claimed keys",
        lambda: r.c.runs.create(
            tid,
            "subgraph",
            input=STEPS,
            config={"configurable": claimed},
            headers={"x-request-id": "req-42"},
        ),
    )
    r.note(
        "its request id", run and run["kwargs"]["config"]["configurable"]["langgraph_request_id"]
    )
    r.call("join it", lambda: r.c.runs.join(tid, run["run_id"]))
    r.call("its checkpoint's metadata", lambda: r.c.threads.get_state(tid)["metadata"])
    r.call(
        "configurable and context both",
        lambda: r.c.runs.wait(
            tid, "subgraph", input=STEPS, config={"configurable": {"x": 1}}, context={"x": 2}
        ),
    )


def configurable_metadata(r: Recorder) -> None:
    """A run's configurable values (a template's `model`, a client's `user_id` with no
    auth) as the reference copies them: into message metadata, checkpoints and history."""
    tid = r.c.threads.create()["thread_id"]
    config = {"configurable": {"model": "openai/gpt-4.1", "user_id": "client-7", "n": 3}}
    r.stream(
        "messages-tuple with configurable values",
        lambda: r.c.runs.stream(tid, "chat", input=HI, stream_mode="messages-tuple", config=config),
    )  # type: ignore[arg-type]
    r.call("its checkpoint's metadata", lambda: r.c.threads.get_state(tid)["metadata"])
    r.call("its history", lambda: r.c.threads.get_history(tid, limit=3))
    r.call("the run's configurable", lambda: r.c.runs.list(tid)[0]["kwargs"]["config"])


def unknown_assistant(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    unknown = "00000000-0000-4000-8000-00000000dead"
    for name in ("no-such-graph", unknown):
        r.call(f"stateless wait on {name}", lambda n=name: r.c.runs.wait(None, n, input=STEPS))
        r.call(f"wait on {name}", lambda n=name: r.c.runs.wait(tid, n, input=STEPS))
        r.stream(f"stream on {name}", lambda n=name: r.c.runs.stream(tid, n, input=STEPS))
        r.call(f"create on {name}", lambda n=name: r.c.runs.create(tid, n, input=STEPS))
    status_of(r, "the thread after", tid)


def joins(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    run = r.c.runs.create(
        tid, "subgraph", input=STEPS, stream_mode=["updates"], stream_resumable=True
    )
    r.stream("join_stream a background run", lambda: r.c.runs.join_stream(tid, run["run_id"]))
    r.call("join it", lambda: r.c.runs.join(tid, run["run_id"]))


def state_reads(r: Recorder) -> None:
    """Every read of a thread whose state holds messages: stored state leaves as streamed."""
    tid = r.c.threads.create(metadata={"reads": "yes"})["thread_id"]
    r.call("wait on the chat", lambda: r.c.runs.wait(tid, "chat", input=HI))
    r.call("threads.get", lambda: r.c.threads.get(tid))
    r.call("get_state", lambda: r.c.threads.get_state(tid))
    r.call("get_history", lambda: r.c.threads.get_history(tid, limit=2))
    r.call("search by metadata", lambda: r.c.threads.search(metadata={"reads": "yes"}, limit=1))
    copy = r.call("copy", lambda: r.c.threads.copy(tid))
    if copy:
        new = copy["thread_id"]
        r.call("get_state of the copy", lambda: r.c.threads.get_state(new))
        # Ids are masked: whether each of the copy's checkpoints names the copy, not the source.
        r.note(
            "the copy's checkpoints name it",
            [
                [h["metadata"].get("thread_id") == new, h["checkpoint"]["thread_id"] == new]
                for h in r.c.threads.get_history(new, limit=10)
            ],
        )
    r.call("get_state select", lambda: r.c.threads.get_state(tid, select=["values", "next"]))
    r.call("get_state select a key", lambda: r.c.threads.get_state(tid, select=["values.messages"]))


def interrupt_reads(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    r.c.runs.wait(tid, "interrupting", input=STEPS)
    r.call("threads.get at the interrupt", lambda: r.c.threads.get(tid))
    r.call("get_history at the interrupt", lambda: r.c.threads.get_history(tid, limit=1))


def cancel(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    run = r.c.runs.create(tid, "slow", input=STEPS)
    wait_running(r, tid, run["run_id"])
    done = r.c.runs.cancel(tid, run["run_id"], wait=True, action="interrupt")
    r.note("cancel with action=interrupt answers", type(done).__name__)  # how far it got: timing
    status_of(r, "the cancelled run", tid, run["run_id"])
    status_of(r, "the thread after cancel", tid)


def rollback(r: Recorder) -> None:
    tid = r.c.threads.create()["thread_id"]
    first = r.c.runs.create(tid, "slow", input=STEPS)
    wait_running(r, tid, first["run_id"])
    last = r.call(
        "create with rollback",
        lambda: r.c.runs.create(tid, "subgraph", input=STEPS, multitask_strategy="rollback"),
    )
    if last:
        r.call("join the last run", lambda: r.c.runs.join(tid, last["run_id"]))
        status_of(r, "the last run", tid, last["run_id"])
    r.call("the rolled back run", lambda: r.c.runs.get(tid, first["run_id"]))


def wait_running(r: Recorder, tid: str, rid: str) -> None:
    """Until the run has started (bounded): the strategies act on a running run."""
    deadline = time.monotonic() + 30
    while r.c.runs.get(tid, rid)["status"] != "running":
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.05)


SCENARIOS: dict[str, Callable[[Recorder], None]] = {
    "interrupt and resume": interrupt_and_resume,
    "interrupt streams": interrupt_streams,
    "values": stream_modes("subgraph", ["values"], STEPS),
    "updates": stream_modes("subgraph", ["updates"], STEPS),
    "custom": stream_modes("subgraph", ["custom"], STEPS),
    "debug": stream_modes("subgraph", ["debug"], STEPS),
    "tasks": stream_modes("subgraph", ["tasks"], STEPS),
    "checkpoints": stream_modes("subgraph", ["checkpoints"], STEPS),
    "several modes": stream_modes("subgraph", ["values", "updates", "custom"], STEPS),
    "subgraphs": stream_modes(
        "subgraph", ["values", "updates", "custom", "tasks"], STEPS, subgraphs=True
    ),
    "messages-tuple": stream_modes("chat", ["messages-tuple"], HI),
    "messages": stream_modes("chat", ["messages"], HI),
    "messages and values": stream_modes("chat", ["messages-tuple", "values"], HI),
    "events": stream_modes("subgraph", ["events"], STEPS),
    "events of a chat model": stream_modes("chat", ["events"], HI),
    "tools mode": stream_modes("subgraph", ["tools"], STEPS),
    "lifecycle mode": stream_modes("subgraph", ["lifecycle"], STEPS),
    "raising graph": raising,
    "background runs": background,
    "threads on demand": threads_on_demand,
    "stateless runs": stateless,
    "multitask strategies": multitask,
    "run options": run_options,
    "inputs": inputs,
    "joins": joins,
    "request keys": request_keys,
    "configurable metadata": configurable_metadata,
    "unknown assistant": unknown_assistant,
    "state reads": state_reads,
    "interrupt reads": interrupt_reads,
    "cancel": cancel,
    "rollback": rollback,
}


def run_scenario(name: str, client: SyncLangGraphClient) -> list[Observation]:
    recorder = Recorder(client)
    SCENARIOS[name](recorder)
    return recorder.seen
