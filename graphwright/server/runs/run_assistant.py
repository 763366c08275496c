"""The assistant a run names.

Resolved (an assistant id or a graph name), its config and context laid under the run's own, and the
run's thread stamped with it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.server.auth.authority import User
from graphwright.server.errors import UnprocessableError
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.records.thread_store import Threads
from graphwright.server.runs.run_headers import (
    RESERVED,
    configurable_headers,
    request_configurable,
    request_headers,
)
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright_errors import NotFoundError


def resolve(orch: Orchestrator, body: RunCreate, *, creator: User | None = None) -> dict[str, Any]:
    """The run's assistant.

    `body` then names its graph and carries its config and context (the run's own values win), with
    `graph_id`, `assistant_id` and the request's keys (caller, request id, start) in `configurable`
    as the reference puts them, the run's own configurable mirrored into a context it lacks, and the
    reference's default `multitask_strategy`, `enqueue`. `user_id` is the caller's identity when
    there is one (a run cannot claim another user), else the client's own, as the reference keeps
    it.
    """
    try:
        assistant = AssistantStore.of(orch).get(body.assistant_id)
    except NotFoundError:
        if not _is_uuid(body.assistant_id):  # a misspelt graph name: 422, as the reference
            graphs = ", ".join(orch.graphs.names())
            raise UnprocessableError(
                f"Invalid assistant: '{body.assistant_id}'. Must be either:\n- A valid assistant "
                f"UUID, or\n- One of the registered graphs: {graphs}"
            ) from None
        raise
    orch.graphs.get(assistant["graph_id"])
    body.assistant_id = assistant["graph_id"]
    mine = dict(body.config or {})
    base = dict(assistant.get("config") or {})
    wanted = orch.project.config.http.configurable_headers if orch.project is not None else None
    given = {k: v for k, v in (mine.pop("configurable", None) or {}).items() if k not in RESERVED}
    configurable = {
        **(base.pop("configurable", None) or {}),
        **given,
        **configurable_headers(request_headers.get(), wanted),
        "graph_id": assistant["graph_id"],
        "assistant_id": assistant["assistant_id"],
    }
    for key in RESERVED & configurable.keys():  # the server's to set, dropped as the reference does
        del configurable[key]
    claimed = configurable.get("user_id")
    server = request_configurable(creator)  # a cron's run: its creator is the caller
    configurable.update(server)
    if not server["langgraph_auth_user_id"] and claimed:  # no caller identity: the client's
        configurable["user_id"] = claimed  # (or assistant's) `user_id` stays, as the reference's
    body.multitask_strategy = body.multitask_strategy or "enqueue"
    body.config = {**base, **mine, "configurable": configurable}
    if body.context is None and given:  # mirrored into the context, as the reference does
        body.context = dict(given)
    if assistant.get("context") or body.context:
        body.context = {**(assistant.get("context") or {}), **(body.context or {})}
    return assistant


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def merge_metadata(
    meta: dict[str, str], assistant: dict[str, Any], body: RunCreate, *, stateless: bool
) -> None:
    """The run's metadata as the reference records it.

    The assistant's, then the thread's (`meta`) as it was before this run (its `graph_id` the first
    graph run on it; none on a stateless run's thread), then the run's assistant id, then the run's
    own metadata (which wins).
    """
    thread = json.loads(meta.get("metadata") or "{}")
    if not stateless:
        thread.setdefault("graph_id", assistant["graph_id"])
    body.metadata = {
        **(assistant.get("metadata") or {}),
        **thread,
        "assistant_id": assistant["assistant_id"],
        **(body.metadata or {}),
    }


def stamp(
    orch: Orchestrator,
    thread_id: str,
    assistant: dict[str, Any],
    meta: dict[str, str] | None = None,
) -> None:
    """Note the run's graph and assistant on its thread (chat UIs list threads by them)."""
    Threads(orch).stamp(thread_id, assistant["graph_id"], assistant["assistant_id"], meta)
