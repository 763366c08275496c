"""An Orchestrator bound to a private redis-server and (optionally) the scripted model server."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from graphwright.offline import OfflineChatModel
from graphwright.orchestrator import Orchestrator
from graphwright.settings import Settings
from graphwright.testing.scripted_openai import ScriptedOpenAI


def settings_for(redis_url: str, *, prefix: str | None = None, **fields: Any) -> Settings:
    """Settings on ``redis_url`` under a fresh key prefix, ignoring any ``.env`` file and
    taking ``fields`` by their environment names (``GRAPHWRIGHT_GRAPHS=...``)."""
    return Settings(_env_file=None, REDIS_URL=redis_url,  # type: ignore[call-arg]
                    GRAPHWRIGHT_KEY_PREFIX=prefix or f"t{uuid.uuid4().hex[:12]}", **fields)


@contextmanager
def bound_orchestrator(redis_url: str, model: ScriptedOpenAI | None = None, *,
                       prefix: str | None = None, settings: Settings | None = None,
                       **kwargs: Any) -> Iterator[Orchestrator]:
    """An Orchestrator on ``redis_url`` (under ``prefix``, or ``settings`` as given) whose
    model is the real ChatOpenAI client against ``model``, or the offline model when None;
    ``kwargs`` (``graphs``, ``limits``, ...) go to ``Orchestrator``."""
    chat = model.chat_model() if model is not None else OfflineChatModel()
    orch = Orchestrator(settings=settings or settings_for(redis_url, prefix=prefix), model=chat,
                        **kwargs)
    try:
        yield orch
    finally:
        orch.client.close()


def until(check: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` was awaited after ``timeout_s``.
    For background runs, workers and servers, whose progress a test can only observe."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
