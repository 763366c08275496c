"""``/assistants``: each registered graph is an assistant whose id is the graph name."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from checkpoints.errors import NotFoundError
from graphs.context import RunInput
from graphwright.drawing import drawable
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import jsonable
from graphwright.server import access
from graphwright.server.access import Grant
from graphwright.server.deps import Orch
from graphwright.server.runs import iso
from graphwright.server.schemas import Assistant, AssistantSearch

router = APIRouter(tags=["assistants"])


def assistant(orch: Orchestrator, name: str) -> Assistant:
    spec = orch.graphs.get(name)
    return Assistant(assistant_id=name, graph_id=name, name=name, description=spec.description,
                     created_at=iso(0), updated_at=iso(0))


def visible_assistant(orch: Orchestrator, grant: Grant, name: str) -> Assistant:
    found = assistant(orch, name)
    if not grant.allows(found.metadata):
        raise NotFoundError(f"no assistant {name!r}")
    return found


@router.post("/assistants/search", response_model=list[Assistant])
def search_assistants(body: AssistantSearch, orch: Orch, grant: access.AssistantSearch) -> list[Assistant]:
    names = [n for n in orch.graphs.names() if body.graph_id in (None, n)]
    found = [a for a in (assistant(orch, n) for n in names) if grant.allows(a.metadata)]
    return found[body.offset: body.offset + body.limit]


@router.get("/assistants/{assistant_id}", response_model=Assistant)
def get_assistant(assistant_id: str, orch: Orch, grant: access.AssistantRead) -> Assistant:
    return visible_assistant(orch, grant, assistant_id)


@router.get("/assistants/{assistant_id}/graph")
def get_graph(assistant_id: str, orch: Orch, grant: access.AssistantRead,
              xray: bool | int = False) -> dict[str, Any]:
    visible_assistant(orch, grant, assistant_id)
    graph = orch.compiled(assistant_id)
    return jsonable(drawable(graph, xray=bool(xray)).to_json())  # type: ignore[no-any-return]


@router.get("/assistants/{assistant_id}/schemas")
def get_schemas(assistant_id: str, orch: Orch, grant: access.AssistantRead) -> dict[str, Any]:
    visible_assistant(orch, grant, assistant_id)
    graph = orch.compiled(assistant_id)
    # Runs take {"goal", "constraints"} (or LangGraph-style messages); the state is the graph's.
    return {"graph_id": assistant_id, "input_schema": RunInput.model_json_schema(),
            "output_schema": graph.get_output_jsonschema(),
            "state_schema": graph.get_output_jsonschema(), "config_schema": None,
            "context_schema": None}
