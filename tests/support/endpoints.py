"""One or more routes per endpoint family of the HTTP service, with a body each accepts:
what the auth, limits and isolation tests ask of every route."""

from __future__ import annotations

ENDPOINTS = [  # one or more per family: system, docs, assistants, threads, runs, review
    ("GET", "/health", None),
    ("GET", "/info", None),
    ("GET", "/openapi.json", None),
    ("GET", "/docs", None),
    ("GET", "/redoc", None),
    ("POST", "/assistants/search", {}),
    ("GET", "/assistants/agent", None),
    ("GET", "/assistants/agent/graph", None),
    ("GET", "/assistants/agent/schemas", None),
    ("POST", "/threads", {}),
    ("POST", "/threads/search", {}),
    ("GET", "/threads/t1", None),
    ("GET", "/threads/t1/state", None),
    ("POST", "/threads/t1/history", {}),
    ("DELETE", "/threads/t1", None),
    ("POST", "/threads/t1/runs", {"assistant_id": "agent", "input": {"goal": "x"}}),
    ("POST", "/threads/t1/runs/wait", {"assistant_id": "agent", "input": {"goal": "x"}}),
    ("POST", "/threads/t1/runs/stream", {"assistant_id": "agent", "input": {"goal": "x"}}),
    ("GET", "/threads/t1/runs", None),
    ("GET", "/threads/t1/runs/r1", None),
    ("GET", "/threads/t1/runs/r1/join", None),
    ("POST", "/threads/t1/runs/r1/cancel", None),
]
