"""``/store``: the long-term memory store of the LangGraph API (items under namespaces)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["store"])
