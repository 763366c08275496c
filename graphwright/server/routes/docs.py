"""``/openapi.json``, ``/docs`` and ``/redoc``, served behind the same auth as the API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)


@router.get("/openapi.json")
def openapi(request: Request) -> dict[str, Any]:
    return request.app.openapi()  # type: ignore[no-any-return]  # FastAPI types it as dict[str, Any]


@router.get("/docs", response_class=HTMLResponse)
def swagger() -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title="graphwright API")


@router.get("/redoc", response_class=HTMLResponse)
def redoc() -> HTMLResponse:
    return get_redoc_html(openapi_url="/openapi.json", title="graphwright API")
