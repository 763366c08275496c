"""Persistence on plain Redis: the checkpoint savers, key layout and embedded server.

The names below load on first use (module `__getattr__`): importing `graphwright.checkpoints.errors`
or `graphwright.checkpoints.keys` must not pay for LangGraph, which the savers import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from graphwright_errors import ConfigurationError, GraphwrightError, InfrastructureError, UserError

if TYPE_CHECKING:
    from graphwright.checkpoints.errors import CorruptCheckpointError, RedisUnavailableError
    from graphwright.checkpoints.keys import Keys
    from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver

_LAZY = {
    "AsyncRedisSaver": "graphwright.checkpoints.redis",
    "CorruptCheckpointError": "graphwright.checkpoints.errors",
    "Keys": "graphwright.checkpoints.keys",
    "RedisSaver": "graphwright.checkpoints.redis",
    "RedisUnavailableError": "graphwright.checkpoints.errors",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


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
