"""A route's JSON body checked against the route's own body model before anything reads it.

FastAPI validates a body after the route's dependencies have run, and the authorization
dependency (``access``) reads the raw body to show it to the ``Auth`` handler: a malformed
body reached it unvalidated (``{"namespace_prefix": true}`` was a 500). This dependency,
first after authentication on every API route, answers such a body with the 422 FastAPI
would have given, naming the field, before any handler or route code sees it."""

from __future__ import annotations

import functools
import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


async def validated_body(request: Request) -> None:
    """422 for a body the route's model refuses; an absent or unparsable body is left to
    FastAPI, whose own 422 for it comes when it reads the body for the route."""
    field = getattr(request.scope.get("route"), "body_field", None)
    if field is None or request.method not in WITH_BODY:
        return
    raw = await request.body()
    if not raw:
        return
    try:
        data = json.loads(raw)
    except ValueError:
        return
    try:
        _adapter(field.field_info.annotation).validate_python(data)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)],
            body=data) from exc
