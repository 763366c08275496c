"""Cross-origin access for browser clients (``GRAPHWRIGHT_CORS_ORIGINS``)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

# Headers a browser client reads from answers: the run a stream belongs to, and paging.
EXPOSED = ["Content-Location", "Location", "X-Pagination-Next", "X-Pagination-Total"]


def allow_origins(app: FastAPI, origins: str | None) -> None:
    """Answer preflights and tag answers for the given comma-separated origins; none: no CORS."""
    allowed = [o.strip().rstrip("/") for o in (origins or "").split(",") if o.strip()]
    if not allowed:
        return
    app.add_middleware(CORSMiddleware, allow_origins=allowed, allow_methods=["*"],
                       allow_headers=["*"], expose_headers=EXPOSED,
                       allow_credentials="*" not in allowed)
