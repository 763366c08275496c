"""The error tree of graphwright, split by whose fault an error is.

It lives in `checkpoints` because that package imports no other project package,
so every layer can raise these without an import cycle.
"""

from __future__ import annotations


class GraphwrightError(Exception):
    """Root of every error graphwright raises on purpose."""


class UserError(GraphwrightError):
    """The caller did something wrong: bad configuration, a bad decision, a bad id."""


class NotFoundError(UserError):
    """The caller named a thread, graph or run that does not exist."""


class ConfigurationError(UserError):
    """A setting or an injected client cannot work as given."""


class InfrastructureError(GraphwrightError):
    """Something under graphwright failed: never swallowed, always raised."""


class RedisUnavailableError(InfrastructureError):
    """Redis could not be reached or answered with a connection-level error."""


class LockLostError(InfrastructureError):
    """This process no longer holds the thread; its writes are refused."""


class CorruptCheckpointError(InfrastructureError):
    """A stored payload could not be decoded; the message names the key."""
