"""The thread-centric protocol's events from a run's stored events (`http._thread_events`), and
its subscription filters: pure, no server."""

from __future__ import annotations

from typing import Any

import pytest

from graphwright.server.http._thread_commands import subscription
from graphwright.server.http._thread_events import Filter, ThreadEvents


def kinds(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        data = e["params"]["data"]
        out.append(f"{e['method']}:{data['event']}" if e["method"] == "lifecycle" else e["method"])
    return out


def test_an_interrupt_asks_for_input_then_the_root_is_interrupted_once() -> None:
    state = ThreadEvents()
    out = state.begin("r1", "g")
    gate = {"steps": ["a"], "__interrupt__": [{"id": "i1", "value": {"q": 1}}]}
    out += state.feed("10-0", "values", gate)
    out += state.end("success", waiting=True)
    assert kinds(out) == ["lifecycle:running", "input.requested", "lifecycle:interrupted", "values"]
    assert out[1]["params"]["data"] == {"interrupt_id": "i1", "payload": {"q": 1}}
    assert out[3]["params"]["data"] == {"steps": ["a"]} and out[3]["event_id"] == "10-0"
    assert [e["seq"] for e in out] == [1, 2, 3, 4]


def test_a_raising_run_fails_with_its_message_and_ends_once() -> None:
    state = ThreadEvents()
    state.begin("r1", "g")
    out = state.feed("11-0", "error", {"error": "ValueError", "message": "boom"})
    assert out[-1]["params"]["data"] == {"event": "failed", "graph_name": "g", "error": "boom"}
    assert state.end("error", waiting=False) == []


def test_a_subgraph_starts_after_its_first_values_and_completes_when_left() -> None:
    state = ThreadEvents()
    state.begin("r1", "g")
    out = state.feed("12-0", "values|inner:t1", {"steps": []})
    out += state.feed("13-0", "values|inner:t1", {"steps": ["x"]})
    out += state.feed("14-0", "values", {"steps": ["x"]})
    out += state.end("success", waiting=False)
    assert kinds(out) == [
        "values",
        "lifecycle:started",
        "values",
        "lifecycle:completed",
        "values",
        "lifecycle:completed",
    ]
    assert out[1]["params"]["data"]["trigger_call_id"] == "t1"
    assert out[3]["params"]["namespace"] == ["inner:t1"]
    assert out[5]["params"]["namespace"] == []


def event(method: str, namespace: list[str], data: Any = None) -> dict[str, Any]:
    return {"method": method, "params": {"namespace": namespace, "data": data}}


@pytest.mark.parametrize(
    ("wanted", "seen", "matches"),
    [
        (Filter(channels=frozenset({"input"})), event("input.requested", []), True),
        (Filter(channels=frozenset({"values"})), event("lifecycle", []), False),
        (Filter(channels=frozenset({"custom:a"})), event("custom", [], {"name": "a"}), True),
        (Filter(channels=frozenset({"custom:a"})), event("custom", [], {"name": "b"}), False),
        (
            Filter(channels=frozenset({"values"}), namespaces=[["inner"]]),
            event("values", ["inner:t1", "deep:t2"]),
            True,
        ),
        (
            Filter(channels=frozenset({"values"}), namespaces=[["inner"]], depth=0),
            event("values", ["inner:t1", "deep:t2"]),
            False,
        ),
        (
            Filter(channels=frozenset({"values"}), namespaces=[["inner:t9"]]),
            event("values", ["inner:t1"]),
            False,
        ),
    ],
)
def test_a_filter_reads_channel_name_and_namespace(
    wanted: Filter, seen: dict[str, Any], matches: bool
) -> None:
    assert wanted.matches(seen) is matches


def test_a_subscription_is_refused_without_known_channels() -> None:
    assert isinstance(subscription({"channels": []}), str)
    assert isinstance(subscription({"channels": ["debug"]}), str)
    found = subscription({"channels": ["values"], "depth": True, "namespaces": [["a"], [1]]})
    assert found == Filter(channels=frozenset({"values"}))


def test_messages_carry_content_block_events_and_drop_classic_tuples() -> None:
    """A protocol run's stored `[event, metadata]` leaves as the event alone; a classic run's
    `messages-tuple` on the same thread (a whole message) is not this protocol's."""
    state = ThreadEvents()
    state.begin("r1", "g")
    start = {"event": "message-start", "role": "ai", "id": "m1"}
    out = state.feed("12-0", "messages|inner:1", [start, {"langgraph_node": "reply"}])
    assert [(e["method"], e["params"]["data"]) for e in out] == [("messages", start)]
    assert out[0]["params"]["namespace"] == ["inner:1"]
    assert state.feed("13-0", "messages", [{"type": "ai", "content": "hi"}, {}]) == []


def test_values_carry_messages_in_protocol_form() -> None:
    """Empty fields left out, content as blocks, tool calls as `tool_call` blocks."""
    state = ThreadEvents()
    state.begin("r1", "g")
    ai = {
        "type": "ai",
        "content": [{"type": "text", "text": "hi", "index": 0}, "more"],
        "id": "m1",
        "name": None,
        "additional_kwargs": {},
        "response_metadata": {},
        "tool_calls": [{"name": "lookup", "args": {"q": 1}, "id": "c1", "type": "tool_call"}],
        "invalid_tool_calls": [],
        "usage_metadata": None,
    }
    tool = {"type": "tool", "content": "ok", "tool_call_id": "c1", "status": "success"}
    (out,) = state.feed("14-0", "values", {"messages": [ai, tool], "steps": []})
    assert out["params"]["data"] == {
        "messages": [
            {
                "type": "ai",
                "content": [
                    {"type": "text", "text": "hi", "index": 0},
                    {"type": "text", "text": "more"},
                ],
                "id": "m1",
                "tool_calls": [
                    {"type": "tool_call", "name": "lookup", "args": {"q": 1}, "id": "c1"}
                ],
            },
            {"type": "tool", "content": "ok", "tool_call_id": "c1", "status": "success"},
        ],
        "steps": [],
    }
