"""Failures a tool reports on purpose; each becomes a structured observation.

Not part of graphwright's error tree (`graphwright_errors`): the executor turns a
`ToolFailure` into an observation the model reads. One that escapes the executor (a
graph calling a tool function directly) fails its run like any other bug in a graph,
instead of passing for graphwright's own error (a CLI exit 1, an HTTP 500).
"""

from __future__ import annotations


class ToolFailure(Exception):
    """A tool could not do what was asked; `kind` tells the model why."""

    kind = "tool_error"
    retryable = False


class NotFound(ToolFailure):
    """What the tool was asked for does not exist."""

    kind = "not_found"


class Unavailable(ToolFailure):
    """The service behind the tool is down; a retry may succeed."""

    kind = "unavailable"
    retryable = True


class Conflict(ToolFailure):
    """The request clashes with what exists (an overlapping event)."""

    kind = "conflict"


class InvalidInput(ToolFailure):
    """Arguments were well-typed but make no sense (a bad date, an empty range)."""

    kind = "invalid_arguments"
