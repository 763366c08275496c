"""Persistence on plain Redis: the checkpoint savers, key layout and embedded server."""

from checkpoints.errors import (
    ConfigurationError,
    CorruptCheckpointError,
    GraphwrightError,
    InfrastructureError,
    RedisUnavailableError,
    UserError,
)
from checkpoints.keys import Keys
from checkpoints.redis import AsyncRedisSaver, RedisSaver

__all__ = [
    "AsyncRedisSaver",
    "ConfigurationError",
    "CorruptCheckpointError",
    "GraphwrightError",
    "InfrastructureError",
    "Keys",
    "RedisSaver",
    "RedisUnavailableError",
    "UserError",
]
