"""Persistence on plain Redis: the checkpoint savers, key layout and embedded server.

The names below load on first use (module ``__getattr__``): importing ``checkpoints.errors``
or ``checkpoints.keys`` must not pay for LangGraph, which the savers import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from graphwright_errors import ConfigurationError, GraphwrightError, InfrastructureError, UserError

if TYPE_CHECKING:
    from checkpoints.errors import CorruptCheckpointError, RedisUnavailableError
    from checkpoints.keys import Keys
    from checkpoints.redis import AsyncRedisSaver, RedisSaver

_LAZY = {
    "AsyncRedisSaver": "checkpoints.redis",
    "CorruptCheckpointError": "checkpoints.errors",
    "Keys": "checkpoints.keys",
    "RedisSaver": "checkpoints.redis",
    "RedisUnavailableError": "checkpoints.errors",
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
