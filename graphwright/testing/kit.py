"""An Orchestrator bound to a private redis-server and (optionally) the scripted model server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphwright.offline import OfflineChatModel
from graphwright.orchestrator import Orchestrator
from graphwright.settings import Settings
from graphwright.testing.scripted_openai import ScriptedOpenAI
from graphwright.testing.until import until


def settings_for(redis_url: str, *, prefix: str | None = None, **fields: Any) -> Settings:
    """Settings on `redis_url` under a fresh key prefix, ignoring any `.env` file.

    `fields` are taken by their environment names (`GRAPHWRIGHT_GRAPHS=...`).
    """
    return Settings(
        _env_file=None,
        REDIS_URL=redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=prefix or f"t{uuid.uuid4().hex[:12]}",
        **fields,
    )


@contextmanager
def bound_orchestrator(
    redis_url: str,
    model: ScriptedOpenAI | None = None,
    *,
    prefix: str | None = None,
    settings: Settings | None = None,
    **kwargs: Any,
) -> Iterator[Orchestrator]:
    """An Orchestrator on `redis_url` whose model is the real ChatOpenAI client against `model`.

    Under `prefix`, or `settings` as given; the offline model when `model` is None. `kwargs`
    (`graphs`, `limits`, ...) go to `Orchestrator`.
    """
    chat = model.chat_model() if model is not None else OfflineChatModel()
    orch = Orchestrator(
        settings=settings or settings_for(redis_url, prefix=prefix), model=chat, **kwargs
    )
    try:
        yield orch
    finally:
        orch.close()


__all__ = ["bound_orchestrator", "settings_for", "until"]  # until: kept here for older imports
