"""Open the checkpoint saver the settings ask for: a Redis URL or the embedded server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphwright.checkpoints.connect import connect
from graphwright.checkpoints.embedded import EmbeddedRedis
from graphwright.settings import Settings
from graphwright_errors import ConfigurationError

if TYPE_CHECKING:
    from graphwright.checkpoints.redis import RedisSaver

# What a user can do when Redis is unreachable: said here, where the settings are known.
UNREACHABLE_HINT = (
    "Start Redis there, or set REDIS_URL to a running server; unset it to use the embedded Redis."
)


def redis_url(settings: Settings) -> str:
    """The configured URL, or the embedded server's (started on first use)."""
    if settings.redis_url:
        return settings.redis_url
    try:
        return EmbeddedRedis(settings.home).start()
    except ConfigurationError as exc:
        raise ConfigurationError(f"{exc}; set REDIS_URL to a running Redis instead") from exc


def open_saver(settings: Settings) -> RedisSaver:
    """The checkpointer `Settings` asks for, on its Redis."""
    from graphwright.checkpoints.redis import (
        RedisSaver,  # LangGraph: not for redis_url's light callers
    )

    return RedisSaver(
        connect(redis_url(settings), cluster=settings.redis_cluster),
        prefix=settings.key_prefix,
        ttl_s=settings.checkpoint_ttl_s,
        encrypt=settings.encrypt,
    )
