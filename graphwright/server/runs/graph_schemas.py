"""A compiled graph's JSON schemas (input, output, state, config, context).

As the Agent Server's `assistants.get_schemas` and `get_subgraphs` give them.

LangGraph's own helpers make each schema. A graph whose state pydantic refuses (a
`typing.TypedDict` on Python 3.11) still answers: that schema is `null`, and the state
schema falls back to one property per channel, typed where pydantic can type it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter
from pydantic.errors import PydanticUserError

from graphwright.graphs.context import Graph

log = logging.getLogger(__name__)
# Keys of `configurable` that the server fills in itself, not the assistant's config.
SERVER_KEYS = (
    "__pregel_checkpointer",
    "__pregel_store",
    "checkpoint_id",
    "checkpoint_ns",
    "thread_id",
)
SchemaError = (PydanticUserError, TypeError, ValueError, KeyError, AttributeError)


def _tried(name: str, graph: Any, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except SchemaError as exc:
        log.warning("graph %s: no %s schema (%s)", graph.get_name(), name, exc)
        return None


def channel_adapter(graph: Any, key: str) -> TypeAdapter[Any]:
    """A validator for what an input may write to channel `key`.

    Its update type where pydantic can check it, else anything (the reference checks no further).
    """
    channel = graph.channels.get(key) if not key.startswith("__") else None
    try:
        return TypeAdapter(channel.UpdateType if channel is not None else Any)
    except SchemaError:
        return TypeAdapter(Any)


def _field(kind: Any) -> dict[str, Any]:
    try:
        return dict(TypeAdapter(kind).json_schema())
    except SchemaError:
        return {}


def state_schema(graph: Any) -> dict[str, Any]:
    """One property per state channel the graph streams."""
    props = {}
    for key in graph.stream_channels_list:
        props[key] = {
            "default": None,
            "title": key.replace("_", " ").title(),
            **_field(graph.channels[key].UpdateType),
        }
    return {"title": graph.get_name("State"), "type": "object", "properties": props}


def config_schema(graph: Any) -> dict[str, Any]:
    """The `configurable` part of the graph's config schema, without the server's keys."""
    with warnings.catch_warnings():  # the reference reads it the same deprecated way
        warnings.simplefilter("ignore")
        fields = getattr(graph.config_schema(), "model_fields", {})
    if "configurable" not in fields:
        return {}
    annotation: Any = fields["configurable"].annotation
    schema = dict(TypeAdapter(annotation).json_schema())
    for key in SERVER_KEYS:
        schema.get("properties", {}).pop(key, None)
    return schema


def schemas(graph: Graph | Any) -> dict[str, Any]:
    """A graph's input, output, state, config and context schemas; one that fails is null."""
    return {
        "input_schema": _tried("input", graph, graph.get_input_jsonschema),
        "output_schema": _tried("output", graph, graph.get_output_jsonschema),
        "state_schema": _tried("state", graph, lambda: state_schema(graph)),
        "config_schema": _tried("config", graph, lambda: config_schema(graph)),
        "context_schema": _tried("context", graph, graph.get_context_jsonschema),
    }


def subgraphs(graph: Graph | Any, namespace: str | None, recurse: bool) -> dict[str, Any]:
    """The schemas of each subgraph, by namespace."""
    return {
        ns: schemas(sub) for ns, sub in graph.get_subgraphs(namespace=namespace, recurse=recurse)
    }
