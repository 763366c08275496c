"""Open the checkpoint saver the settings ask for: a Redis URL or the embedded server."""

from __future__ import annotations

from checkpoints.connect import connect
from checkpoints.embedded import EmbeddedRedis
from checkpoints.redis import RedisSaver
from graphwright.settings import Settings


def redis_url(settings: Settings) -> str:
    """The configured URL, or the embedded server's (started on first use)."""
    if settings.redis_url:
        return settings.redis_url
    return EmbeddedRedis(settings.home).start()


def open_saver(settings: Settings) -> RedisSaver:
    return RedisSaver(
        connect(redis_url(settings), cluster=settings.redis_cluster),
        prefix=settings.key_prefix,
        ttl_s=settings.checkpoint_ttl_s,
        encrypt=settings.encrypt,
    )
