"""A thread's runs as the events of the thread-centric streaming protocol.

For `langgraph-sdk`'s `client.threads.stream`: each run's stored SSE events (`values`, `error`,
`mode|namespace` for subgraphs) become `{"type": "event", "method", "params", "seq",
"event_id"}` envelopes, with the lifecycle and `input.requested` events the reference
derives from them, and chat models' content-block events on `messages`. Pure: the follower
(`http._thread_follow`) feeds it, the routes send.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from graphwright.server.http._thread_values import protocol_values

# The channels a subscription may name (and `custom:<name>`), as the reference accepts them.
CHANNELS = frozenset(
    {
        "values",
        "updates",
        "checkpoints",
        "messages",
        "tools",
        "custom",
        "lifecycle",
        "input",
        "tasks",
    }
)
# What a finished run's status reads as on the `lifecycle` channel.
LIFECYCLE = {"success": "completed", "error": "failed", "interrupted": "interrupted"}

Event = dict[str, Any]


def content_block_event(data: Any) -> Any:
    """The content-block event of a stored `[event, metadata]` pair, as the reference sends it.

    None for any other shape: a classic run's `messages-tuple` on the same thread carries whole
    messages, which this protocol does not send.
    """
    head = data[0] if isinstance(data, list) and len(data) == 2 else data
    return head if isinstance(head, dict) and isinstance(head.get("event"), str) else None


def supported(channel: str) -> bool:
    """Whether a subscription may name this channel (the reference refuses others)."""
    return channel in CHANNELS or (channel.startswith("custom:") and len(channel) > 7)


def prefixed(namespace: list[str], prefix: list[str]) -> bool:
    """Whether `namespace` starts with `prefix`.

    A prefix segment without `:` also matches a segment's name before its task id (`inner` matches
    `inner:<id>`).
    """
    if len(prefix) > len(namespace):
        return False
    return all(
        have == want or (":" not in want and have.split(":")[0] == want)
        for have, want in zip(namespace, prefix, strict=False)
    )


@dataclass(frozen=True, kw_only=True)
class Filter:
    """One subscription: its channels, and optionally the namespaces (and depth below them)."""

    channels: frozenset[str]
    namespaces: list[list[str]] | None = None
    depth: int | None = None

    def matches(self, event: Event) -> bool:
        method = str(event.get("method", ""))
        channel = "input" if method == "input.requested" else method
        params = event.get("params") or {}
        if channel == "custom":
            data = params.get("data")
            name = data.get("name") if isinstance(data, dict) else None
            if "custom" not in self.channels and f"custom:{name}" not in self.channels:
                return False
        elif channel not in self.channels:
            return False
        if not self.namespaces:
            return True
        ns = list(params.get("namespace") or [])
        return any(
            prefixed(ns, prefix) and (self.depth is None or len(ns) - len(prefix) <= self.depth)
            for prefix in self.namespaces
        )


def now_ms() -> int:
    """Milliseconds since the epoch, the unit the protocol's timestamps use."""
    return int(time.time() * 1000)


def synthetic_id(run_id: str, *parts: str) -> str:
    """The id of an event no stored entry carries (lifecycle, input requests).

    It is the same for every connection that replays the run, so a client deduplicates across
    reconnects.
    """
    return f"synth:{run_id}:{'|'.join(parts)}"


@dataclass
class ThreadEvents:
    """Numbers a connection's events (`seq`) and keeps what one run's events imply.

    That is: the subgraph namespaces still open, the interrupts asked, whether its end was
    announced.
    """

    seq: int = 0
    run_id: str = ""
    graph: str = "root"
    open_ns: dict[str, list[str]] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)
    ended: bool = False

    def event(
        self, method: str, namespace: list[str], data: Any, event_id: str, at: int | None = None
    ) -> Event:
        self.seq += 1
        params = {"namespace": namespace, "timestamp": at or now_ms(), "data": data}
        return {
            "type": "event",
            "event_id": event_id,
            "seq": self.seq,
            "method": method,
            "params": params,
        }

    def lifecycle(self, namespace: list[str], status: str, graph: str, **more: Any) -> Event:
        key = "|".join(namespace)
        data = {"event": status, "graph_name": graph, **more}
        return self.event(
            "lifecycle", namespace, data, synthetic_id(self.run_id, "lc", key, status)
        )

    def begin(self, run_id: str, graph: str) -> list[Event]:
        """A run of the thread begins (or is replayed): its root is `running`."""
        self.run_id, self.graph = run_id, graph
        self.open_ns, self.asked, self.ended = {}, set(), False
        return [self.lifecycle([], "running", graph)]

    def feed(self, entry_id: str, name: str, data: Any) -> list[Event]:
        """The envelopes of one stored event (`entry_id` its Redis stream id)."""
        method, *namespace = name.split("|")
        at = int(entry_id.split("-")[0]) if entry_id.split("-")[0].isdigit() else None
        if method == "error":
            message = data.get("message") if isinstance(data, dict) else str(data)
            self.ended = True
            return [*self.close_left([]), self.lifecycle([], "failed", self.graph, error=message)]
        if method == "messages":
            payload = content_block_event(data)
            if payload is None:
                return []
            return [
                *self.close_left(namespace),
                self.event("messages", namespace, payload, entry_id, at),
            ]
        if method != "values":
            return []
        out = self.close_left(namespace)
        values = dict(data) if isinstance(data, dict) else data
        interrupts = values.pop("__interrupt__", None) if isinstance(values, dict) else None
        out += self.ask(namespace, interrupts or [])
        if values != {}:
            out.append(self.event("values", namespace, protocol_values(values), entry_id, at))
        if namespace and "|".join(namespace) not in self.open_ns:
            out.append(self.started(namespace, f"{entry_id}.1", at))
        return out

    def ask(self, namespace: list[str], interrupts: list[Any]) -> list[Event]:
        """`input.requested` for each new interrupt, then the root `interrupted`."""
        out: list[Event] = []
        key = "|".join(namespace)
        for item in interrupts:
            interrupt_id = item.get("id") if isinstance(item, dict) else None
            if not interrupt_id or interrupt_id in self.asked:
                continue
            self.asked.add(interrupt_id)
            data = {"interrupt_id": interrupt_id, "payload": item.get("value")}
            event_id = synthetic_id(self.run_id, "input", key, interrupt_id)
            out.append(self.event("input.requested", namespace, data, event_id))
        if out and not self.ended:
            self.ended = True
            out.append(self.lifecycle([], "interrupted", self.graph))
        return out

    def started(self, namespace: list[str], event_id: str, at: int | None) -> Event:
        self.open_ns["|".join(namespace)] = namespace
        name, _, call = namespace[-1].partition(":")
        data = {
            "event": "started",
            "namespace": namespace,
            "graph_name": name,
            "trigger_call_id": call,
        }
        return self.event("lifecycle", namespace, data, event_id, at)

    def close_left(self, current: list[str]) -> list[Event]:
        """`completed` for each open subgraph that `current` is not inside, deepest first."""
        left = [ns for ns in self.open_ns.values() if not prefixed(current, ns)]
        out = []
        for ns in sorted(left, key=len, reverse=True):
            del self.open_ns["|".join(ns)]
            out.append(self.lifecycle(ns, "completed", ns[-1].split(":")[0]))
        return out

    def end(self, status: str, waiting: bool) -> list[Event]:
        """The run has ended with `status`; `waiting`: the thread stops at an interrupt."""
        if self.ended:
            return self.close_left([])
        self.ended = True
        final = LIFECYCLE.get(status, "running")
        if final == "completed" and waiting:
            final = "interrupted"
        return [*self.close_left([]), self.lifecycle([], final, self.graph)]
