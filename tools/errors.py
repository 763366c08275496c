"""Failures a tool reports on purpose; each becomes a structured observation."""

from __future__ import annotations

from checkpoints.errors import GraphwrightError


class ToolFailure(GraphwrightError):
    """A tool could not do what was asked; ``kind`` tells the model why."""

    kind = "tool_error"
    retryable = False


class NotFound(ToolFailure):
    kind = "not_found"


class Unavailable(ToolFailure):
    kind = "unavailable"
    retryable = True


class Conflict(ToolFailure):
    kind = "conflict"


class InvalidInput(ToolFailure):
    """Arguments were well-typed but make no sense (a bad date, an empty range)."""

    kind = "invalid_arguments"
