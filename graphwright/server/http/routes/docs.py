"""`/openapi.json`, `/docs` and `/redoc`, served behind the same auth as the API.

The schema carries OpenAPI links: the id a create returns feeds every operation whose path
takes it, so clients and fuzzers (schemathesis' stateful phase) can follow them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

# (method, path of the create, the ids its JSON answer holds)
CREATES = (
    ("post", "/threads", ("thread_id",)),
    ("post", "/threads/{thread_id}/runs", ("thread_id", "run_id")),
)


def with_links(schema: dict[str, Any]) -> dict[str, Any]:
    """Add a link from each create to each operation whose path parameters it answers."""
    for method, path, ids in CREATES:
        created = schema["paths"].get(path, {}).get(method)
        if created is None:
            continue
        links: dict[str, Any] = {}
        for operations in schema["paths"].values():
            wanted = [
                p["name"]
                for op in operations.values()
                for p in op.get("parameters", [])
                if p.get("in") == "path"
            ]
            if not wanted or not set(wanted) <= set(ids):
                continue
            for op in operations.values():
                links[op["operationId"]] = {
                    "operationId": op["operationId"],
                    "parameters": {
                        f"path.{name}": f"$response.body#/{name}" for name in sorted(set(wanted))
                    },
                }
        created["responses"].setdefault("200", {})["links"] = links
    return schema


ERROR_DETAIL = {
    "type": "object",
    "required": ["detail"],
    "title": "ErrorDetail",
    "properties": {"detail": {"type": "string"}},
}


def with_true_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """Say what the service really answers.

    A 422 is FastAPI's field list or one message (a decision that does not fit its gate), and an
    accepted cancel has no body.
    """
    schema.setdefault("components", {}).setdefault("schemas", {})["ErrorDetail"] = ERROR_DETAIL
    for operations in schema["paths"].values():
        for op in operations.values():
            for status, response in op.get("responses", {}).items():
                content = response.get("content", {}).get("application/json")
                if status == "422" and content is not None:
                    content["schema"] = {
                        "anyOf": [content["schema"], {"$ref": "#/components/schemas/ErrorDetail"}]
                    }
                elif status in ("202", "204") and content is not None and not content.get("schema"):
                    del response["content"]
    return schema


def schema_of(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is None:
        app.openapi_schema = with_true_errors(with_links(app.openapi()))
    return app.openapi_schema


@router.get("/openapi.json")
def openapi(request: Request) -> dict[str, Any]:
    return schema_of(request.app)


@router.get("/docs", response_class=HTMLResponse)
def swagger() -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title="graphwright API")


@router.get("/redoc", response_class=HTMLResponse)
def redoc() -> HTMLResponse:
    return get_redoc_html(openapi_url="/openapi.json", title="graphwright API")
