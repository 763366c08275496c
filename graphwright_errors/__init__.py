"""The root of graphwright's error tree, split by whose fault an error is.

The lowest layer: it imports nothing of graphwright, so every package (the API,
graphs, nodes, tools, checkpoints) raises these without importing a layer above it.
Each layer adds its own kinds and writes messages in its own terms: storage errors in
`graphwright.checkpoints.errors` speak of Redis, the API adds what the user should do
(`REDIS_URL`, the embedded server) where it knows the user's settings. A tool's
failure (`graphwright.tools.errors.ToolFailure`) is not in this tree: it is an observation for
the model, and one that escapes the executor fails its run like any other bug.
"""

from __future__ import annotations


class GraphwrightError(Exception):
    """Root of every error graphwright raises on purpose."""


class UserError(GraphwrightError):
    """The caller did something wrong: bad configuration, a bad decision, a bad id."""


class NotFoundError(UserError):
    """The caller named a thread, graph or run that does not exist."""


class ConflictError(UserError):
    """The caller asked to create something that exists already (HTTP 409)."""


class ConfigurationError(UserError):
    """A setting or an injected client cannot work as given."""


class InfrastructureError(GraphwrightError):
    """Something under graphwright failed: never swallowed, always raised."""


class ModelError(InfrastructureError):
    """The model provider failed a call, after the retries that were safe.

    An HTTP error, a timeout, an empty reply: the run ends `failed` with this one line, and the
    thread's next turn or a resume calls the model again.
    """


__all__ = [
    "ConfigurationError",
    "ConflictError",
    "GraphwrightError",
    "InfrastructureError",
    "ModelError",
    "NotFoundError",
    "UserError",
]
