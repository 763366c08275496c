"""``/runs/crons`` and ``/threads/{thread_id}/runs/crons``: scheduled runs."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["crons"])
