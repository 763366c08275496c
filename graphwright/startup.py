"""Long-running processes (`serve`, `worker`) start when Redis does, not before it.

A service started beside its Redis (compose, a restart of both) would otherwise exit on
the first refused connection: it waits out the retry window instead, saying which URL it
waits for, then fails with one clear line naming that URL.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import redis

from graphwright.checkpoints.connect import redact_url
from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.settings import Settings

log = logging.getLogger(__name__)
PAUSE_S = 1.0
T = TypeVar("T")


def when_reachable(
    open_: Callable[[], T], *, forever: bool = False, settings: Settings | None = None
) -> T:
    """`open_()` retried while Redis is unreachable.

    For GRAPHWRIGHT_REDIS_RETRY_S, or for as long as it takes with `forever`.

    Raises:
        RedisUnavailableError: the window passed; the message names the URL used.
    """
    settings = settings or Settings()
    where = redact_url(settings.redis_url) if settings.redis_url else "the embedded Redis"
    deadline = time.monotonic() + settings.redis_retry_s
    while True:
        try:
            return open_()
        # InvalidResponse: something that is not Redis answers there (its port taken by another
        # server): said like a Redis that is not there, with what answered, not a traceback.
        except (
            redis.ConnectionError,
            redis.TimeoutError,
            redis.exceptions.InvalidResponse,
            RedisUnavailableError,
        ) as exc:
            if not forever and time.monotonic() + PAUSE_S > deadline:
                raise RedisUnavailableError(
                    f"Redis at {where} is unreachable after {settings.redis_retry_s:g}s "
                    f"(GRAPHWRIGHT_REDIS_RETRY_S): {type(exc).__name__}: {str(exc)[:200]}"
                ) from exc
            log.warning(
                "Redis at %s is unreachable (%s); waiting for it", where, type(exc).__name__
            )
            time.sleep(PAUSE_S)
