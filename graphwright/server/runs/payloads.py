"""What a run hands its graph.

The input as the graph defines it (checked against its input schema), or a `Command` built from the
request's `command`; and its config.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from langgraph.version import __version__ as langgraph_version
from pydantic import ValidationError

from graphwright.graphs.gates import gate_command
from graphwright.graphs.registry import Graph, GraphSpec, RunInput
from graphwright.nodes.gate_models import GateRequest
from graphwright.server.errors import UnprocessableError
from graphwright.server.runs.graph_schemas import SchemaError, channel_adapter
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright_errors import UserError

graphwright_version = version("graphwright")


def text_of(content: Any) -> str:
    """A message's text: a string, or the text blocks of a content-block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        )
    return str(content)


def goal_of(body: dict[str, Any] | None) -> dict[str, Any]:
    """Our input ({"goal", "constraints"}), or the last user message of a messages input."""
    body = body or {}
    if "goal" in body:
        return {"goal": body["goal"], "constraints": body.get("constraints") or []}
    for message in reversed(body.get("messages") or []):
        if isinstance(message, str):
            return {"goal": message, "constraints": []}
        role = message.get("role") or message.get("type") if isinstance(message, dict) else None
        if role in ("user", "human"):
            return {"goal": text_of(message.get("content", "")), "constraints": []}
    return {"goal": ""}


def check_input(spec: GraphSpec, graph: Graph, value: Any) -> None:
    """Refuse an input the graph cannot take (UserError names the field)."""
    if value is None:
        return
    if spec.make_input is not None:
        if not isinstance(value, dict) or not ({"goal", "messages"} & value.keys()):
            raise UserError(f"graph {spec.name!r} takes {{'goal': ...}} or {{'messages': [...]}}")
        return
    if not isinstance(value, dict):
        raise UnprocessableError(f"graph {spec.name!r} takes an object as its input")
    # Messages are coerced by their reducer (role dicts, content blocks), so they are not
    # checked here; every other field must fit the schema. Missing fields are fine.
    checked = {k: v for k, v in value.items() if k != "messages"}
    try:
        schema = graph.get_input_schema()
    except SchemaError:  # a typing.TypedDict before Python 3.12: each input channel's own type
        for key, field_value in checked.items():
            _check(spec, partial(channel_adapter(graph, key).validate_python, field_value), key)
        return
    _check(spec, lambda: schema.model_validate(checked), "")


def _check(spec: GraphSpec, validate: Callable[[], Any], where: str) -> None:
    """Run one pydantic check; a wrong value (not a missing one) is the caller's 422."""
    try:
        validate()
    except ValidationError as exc:
        wrong = [e for e in exc.errors() if e["type"] != "missing"]
        if wrong:
            place = ".".join(filter(None, (where, *map(str, wrong[0]["loc"])))) or "input"
            raise UnprocessableError(
                f"bad input for graph {spec.name!r}: {place}: {wrong[0]['msg']}"
            ) from exc


def graph_input(spec: GraphSpec, value: Any) -> Any:
    """A request's input as the graph takes it (a goal made a `RunInput` where it adapts)."""
    if value is None or spec.make_input is None:
        return value
    return spec.make_input(RunInput.model_validate(goal_of(value)))


def command_of(
    spec: GraphSpec, graph: Graph, config: RunnableConfig, body: RunCreate, gate: GateRequest | None
) -> Command[Any]:
    """A request's command as LangGraph's; an answer to `gate` is checked against it.

    `gate`: the gate pending at `config`'s checkpoint, read by the caller.
    """
    assert body.command is not None
    cmd = body.command
    if cmd.resume is not None and gate is not None:
        return gate_command(graph, config, cmd.resume, spec.tools(), request=gate)
    fields: dict[str, Any] = {
        k: v for k, v in (("resume", cmd.resume), ("goto", cmd.goto)) if v is not None
    }
    if cmd.update is not None:
        fields["update"] = (
            [tuple(u) for u in cmd.update] if isinstance(cmd.update, list) else cmd.update
        )
    return Command(**fields)


def run_context(graph: Graph, context: dict[str, Any]) -> dict[str, Any]:
    """The context a graph is handed.

    Only the keys its context schema names, as the reference filters (a context mirrored from
    `configurable` holds others).
    """
    try:
        schema = graph.get_context_jsonschema()
    except SchemaError:  # a schema pydantic cannot draw: the context goes as it is
        return context
    names = (schema or {}).get("properties")
    return context if not names else {k: v for k, v in context.items() if k in names}


def server_metadata(run_id: str, attempt: int = 1) -> dict[str, Any]:
    """What the Agent Server adds to every run's metadata.

    So to its checkpoints, tasks and message events: the attempt, the versions, the plan, the host
    and the run id.
    """
    return {
        "run_attempt": attempt,
        "langgraph_version": langgraph_version,
        "langgraph_api_version": graphwright_version,
        "langgraph_plan": "developer",
        "langgraph_host": "self-hosted",
        "langgraph_api_url": os.environ.get("LANGGRAPH_API_URL"),
        "run_id": run_id,
    }


def run_config(
    thread_id: str, run_id: str, body: RunCreate, *, stateless: bool = False
) -> RunnableConfig:
    """The request's config with the thread, run and starting checkpoint filled in."""
    given: dict[str, Any] = dict(body.config or {})
    configurable: dict[str, Any] = {
        **(given.pop("configurable", None) or {}),
        "thread_id": thread_id,
        "run_id": run_id,
        "__after_seconds__": body.after_seconds or 0,
    }
    checkpoint = dict(body.checkpoint or {})
    if body.checkpoint_id:
        checkpoint["checkpoint_id"] = body.checkpoint_id
    if checkpoint.get("checkpoint_id"):
        configurable["checkpoint_id"] = checkpoint["checkpoint_id"]
        configurable["checkpoint_ns"] = checkpoint.get("checkpoint_ns", "")
    metadata = {
        **(given.pop("metadata", None) or {}),
        **(body.metadata or {}),
        **server_metadata(run_id),
    }
    config: RunnableConfig = {
        **given,  # type: ignore[typeddict-item]
        "configurable": configurable,
        "metadata": metadata,
        "run_id": uuid.UUID(run_id),
    }
    config.setdefault("recursion_limit", 10_000)  # budgets in Limits end runs, not this counter
    return config


def run_kwargs(record: dict[str, str]) -> dict[str, Any]:
    """A run record's `kwargs` as the reference lists them.

    What the run was created with, its defaults filled in, the thread and run in `configurable`, and
    the run's metadata in `config` (with what the server adds, once the run has started).
    """
    body: dict[str, Any] = json.loads(record["body"])
    config = dict(body.get("config") or {})
    configurable = {
        **(config.pop("configurable", None) or {}),
        "__after_seconds__": body.get("after_seconds") or 0,
        "run_id": record["run_id"],
        "thread_id": record["thread_id"],
    }
    metadata = dict(body.get("metadata") or {})
    if record.get("started") == "1":
        metadata.update(
            {k: v for k, v in server_metadata(record["run_id"]).items() if k != "run_id"}
        )
    during = body.get("checkpoint_during")
    modes = body.get("stream_mode") or "values"
    command = body.get("command")  # as it was sent: the fields given
    return {
        "input": body.get("input"),
        "command": {k: v for k, v in command.items() if v is not None} if command else None,
        "config": {**config, "configurable": configurable, "metadata": metadata},
        "context": body.get("context") or {},
        "stream_mode": [modes] if isinstance(modes, str) else modes,
        "interrupt_before": body.get("interrupt_before"),
        "interrupt_after": body.get("interrupt_after"),
        "webhook": body.get("webhook"),
        "feedback_keys": body.get("feedback_keys"),
        "temporary": record.get("stateless") == "delete",
        "subgraphs": bool(body.get("stream_subgraphs")),
        "resumable": bool(body.get("stream_resumable")),
        "checkpoint_during": during is not False,
        "durability": body.get("durability") or ("async" if during is not False else "exit"),
    }
