"""What a run is given: parsed input, the user's own messages, and user graph plugins."""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.messages import HumanMessage
from pydantic import ValidationError

from graphwright.graphs.registry import GraphRegistry, RunInput
from graphwright_errors import ConfigurationError, UserError


def user_messages(payload: dict[str, Any], run: RunInput) -> list[dict[str, str | None]]:
    """The user's own words in this run: its human messages, or the goal and constraints."""
    found = [
        {"id": m.id, "content": str(m.content)}
        for m in payload.get("messages") or []
        if isinstance(m, HumanMessage)
    ]
    if not found:
        found = [{"id": None, "content": run.goal}]
    found += [{"id": None, "content": c} for c in run.constraints]
    return found


def parse_input(value: str | dict[str, Any] | RunInput) -> RunInput:
    """A run's input from a goal, JSON text, a dict or a `RunInput`; a bad one is a UserError."""
    if isinstance(value, RunInput):
        return value
    try:
        if isinstance(value, str):
            return RunInput(goal=value)
        return RunInput.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "input"
        raise UserError(f"bad input: {where}: {first['msg']}") from exc


def load_plugin(target: str, graphs: GraphRegistry) -> None:
    """Call `module:function(registry)` so a user's graphs are registered by name."""
    module_name, _, func_name = target.partition(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name or "register")
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"GRAPHWRIGHT_GRAPHS entry {target!r} cannot be loaded ({exc}); "
            "write it as module:function, importable from the working directory"
        ) from exc
    func(graphs)
