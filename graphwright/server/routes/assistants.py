"""``/assistants``: each registered graph is an assistant whose id is the graph name."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from graphs.context import RunInput
from graphwright.drawing import drawable
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import jsonable
from graphwright.server.deps import Orch
from graphwright.server.runs import iso
from graphwright.server.schemas import Assistant, AssistantSearch

router = APIRouter(tags=["assistants"])


def assistant(orch: Orchestrator, name: str) -> Assistant:
    spec = orch.graphs.get(name)
    return Assistant(assistant_id=name, graph_id=name, name=name, description=spec.description,
                     created_at=iso(0), updated_at=iso(0))


@router.post("/assistants/search", response_model=list[Assistant])
def search_assistants(body: AssistantSearch, orch: Orch) -> list[Assistant]:
    names = [n for n in orch.graphs.names() if body.graph_id in (None, n)]
    return [assistant(orch, n) for n in names[body.offset: body.offset + body.limit]]


@router.get("/assistants/{assistant_id}", response_model=Assistant)
def get_assistant(assistant_id: str, orch: Orch) -> Assistant:
    return assistant(orch, assistant_id)


@router.get("/assistants/{assistant_id}/graph")
def get_graph(assistant_id: str, orch: Orch, xray: bool | int = False) -> dict[str, Any]:
    graph = orch.compiled(assistant_id)
    return jsonable(drawable(graph, xray=bool(xray)).to_json())  # type: ignore[no-any-return]


@router.get("/assistants/{assistant_id}/schemas")
def get_schemas(assistant_id: str, orch: Orch) -> dict[str, Any]:
    graph = orch.compiled(assistant_id)
    # graphwright's graphs take {"goal", "constraints"} (or LangGraph-style messages); a
    # langgraph.json graph takes its own input.
    own = orch.graphs.get(assistant_id).native_input
    return {"graph_id": assistant_id,
            "input_schema": graph.get_input_jsonschema() if own else RunInput.model_json_schema(),
            "output_schema": graph.get_output_jsonschema(),
            "state_schema": graph.get_output_jsonschema(), "config_schema": None,
            "context_schema": None}
