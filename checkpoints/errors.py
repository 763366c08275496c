"""Storage errors: what can go wrong in Redis, said in terms of storage only.

They derive from the root tree in `graphwright_errors`; the API layer adds what a user
should do about them (`REDIS_URL`, the embedded server) where it knows the settings.
"""

from __future__ import annotations

from graphwright_errors import ConfigurationError, InfrastructureError


class RedisUnavailableError(InfrastructureError):
    """Redis could not be reached or answered with a connection-level error."""


class LockLostError(InfrastructureError):
    """This process no longer holds the thread; its writes are refused."""


class CorruptCheckpointError(InfrastructureError):
    """A stored payload could not be decoded; the message names the key."""


class EvictingServerError(ConfigurationError):
    """The server may evict keys (its memory policy), and the caller refuses such a server."""
