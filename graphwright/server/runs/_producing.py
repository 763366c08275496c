"""A run's events as they are produced.

From LangGraph's `astream` (one batch of SSE events per chunk), or, when the `events` mode is asked
for, from `astream_events` (v2), both on the run loop, as the reference does. A thread-command
run (`http._thread_commands`) streams chat models' output as content-block events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_STREAM_MESSAGES_V2 as STREAM_MESSAGES_V2

from graphwright.graphs.registry import Graph
from graphwright.serialize import wire
from graphwright.server.runs.framing import Framer, graph_modes
from graphwright.server.schemas.run_bodies import RunCreate

Frames = list[tuple[str, Any]]
# The configurable key a thread-command run carries (`http._thread_commands`), as the
# reference's protocol runs carry it.
PROTOCOL_MARKER = "__event_streaming_v2"


async def produce(
    graph: Graph,
    payload: Any,
    config: Any,
    body: RunCreate,
    framer: Framer,
    options: dict[str, Any],
    run_id: str,
) -> AsyncIterator[Frames]:
    """The graph's stream as frames, in the request's modes, for the executor to relay."""
    modes = graph_modes(body.modes())
    conf = config.get("configurable") or {} if isinstance(config, dict) else {}
    if conf.get(PROTOCOL_MARKER):
        async for frames in protocol(graph, payload, config, body, framer, options, modes):
            yield frames
        return
    if "events" not in body.modes():
        # `values` carries the output schema's channels, after the steps that write them,
        # as the reference streams it; LangGraph's astream default is every channel.
        options = {"output_keys": graph.output_channels, **options}
        async for item in graph.astream(payload, config, stream_mode=modes, **options):
            ns, mode, chunk = item if body.stream_subgraphs else ((), *item)
            yield framer.frames(ns, mode, chunk)
        return
    if (
        graph.name == "LangGraph"
    ):  # the reference names a graph of LangGraph's default name by its id
        graph = graph.with_config(run_name=body.assistant_id)
    async for event in graph.astream_events(
        payload, config, version="v2", stream_mode=modes, **options
    ):
        if "langsmith:hidden" in (event.get("tags") or []):
            continue
        if event["event"] == "on_chain_stream" and str(event.get("run_id")) == run_id:
            chunk = event["data"]["chunk"]
            ns, mode, data = chunk if body.stream_subgraphs else ((), *chunk)
            yield framer.frames(ns, mode, data)
        else:
            yield [("events", wire(event))]


async def protocol(
    graph: Graph,
    payload: Any,
    config: Any,
    body: RunCreate,
    framer: Framer,
    options: dict[str, Any],
    modes: list[Any],
) -> AsyncIterator[Frames]:
    """A thread-command run's stream: chat models' output as content-block events.

    LangGraph's v2 stream with its content-block messages handler (what its v3 event stream,
    which the reference drives, attaches); each message event leaves as `[event, metadata]`.
    """
    options = {"output_keys": graph.output_channels, **options}
    config = {**config, "configurable": {**config["configurable"], STREAM_MESSAGES_V2: True}}
    async for part in graph.astream(payload, config, stream_mode=modes, version="v2", **options):
        ns = part["ns"] if body.stream_subgraphs else ()
        data: Any = part["data"]
        if part["type"] == "values" and part.get("interrupts"):  # v1 puts them in the values
            data = {**data, "__interrupt__": part["interrupts"]}
        yield framer.frames(ns, part["type"], data)
