"""Persistence on plain Redis: the checkpoint savers, key layout and embedded server."""

from checkpoints.errors import CorruptCheckpointError, RedisUnavailableError
from checkpoints.keys import Keys
from checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright_errors import ConfigurationError, GraphwrightError, InfrastructureError, UserError

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
