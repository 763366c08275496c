"""Errors of the HTTP service that map to a status of their own."""

from __future__ import annotations

from graphwright_errors import UserError


class UnprocessableError(UserError):
    """A request that is well-formed JSON but cannot be carried out as given (HTTP 422)."""
