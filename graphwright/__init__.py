"""graphwright: workflow-graph agents on LangGraph, checkpointed to Redis."""

from checkpoints.errors import (
    ConfigurationError,
    CorruptCheckpointError,
    GraphwrightError,
    InfrastructureError,
    RedisUnavailableError,
    UserError,
)
from checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.settings import Settings

__all__ = [
    "AsyncRedisSaver",
    "ConfigurationError",
    "CorruptCheckpointError",
    "GraphwrightError",
    "InfrastructureError",
    "RedisSaver",
    "RedisUnavailableError",
    "Settings",
    "UserError",
]
