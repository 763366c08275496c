"""Graphs that take their own input: what they are given, and the answer read back from them."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from graphwright.graphs.context import Graph, RunInput
from graphwright_errors import UserError


def own_input(graph: Graph, name: str, value: str | dict[str, Any] | RunInput) -> dict[str, Any]:
    """The input exactly as given; a plain string becomes a user message if the input has them.

    Raises:
        UserError: a string for a graph whose input takes no `messages`.
    """
    if isinstance(value, RunInput):
        value = value.goal if not value.constraints else value.model_dump()
    if isinstance(value, dict):
        return value
    schema = graph.get_input_jsonschema()
    fields = schema.get("properties") or {}
    if "messages" in fields or (
        not fields and schema.get("additionalProperties") is not False and _messages_in_state(graph)
    ):
        return {"messages": [{"role": "user", "content": value}]}
    keys = ", ".join(sorted(fields)) or "an object"
    raise UserError(
        f"graph {name!r} takes its own input ({keys}), not a plain string; pass it "
        'as JSON, e.g. --input \'{"key": "value"}\''
    )


def _messages_in_state(graph: Graph) -> bool:
    return "messages" in (graph.get_output_jsonschema().get("properties") or {})


def answer_of(values: Any) -> str | None:
    """The run's answer: a string result, an `answer` key, or the newest assistant text."""
    if isinstance(values, str):  # a functional entrypoint's return value
        return values
    if not isinstance(values, dict):
        return None
    answer = values.get("answer")
    if isinstance(answer, str):
        return answer
    for message in reversed(values.get("messages") or []):
        if isinstance(message, AIMessage) and not message.tool_calls:
            return message.text or None
        if isinstance(message, BaseMessage) and message.type == "human":
            return None
    return None


def output_of(graph: Graph, values: Any) -> Any:
    """The state as the graph's output schema shows it (what `runs.wait` returns)."""
    channels = graph.output_channels
    if not isinstance(values, dict) or isinstance(channels, str):
        return values
    return {k: v for k, v in values.items() if k in channels}
