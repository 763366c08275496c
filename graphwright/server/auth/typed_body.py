"""A route's JSON body checked against the route's own body model before anything reads it.

FastAPI validates a body after the route's dependencies have run, and the authorization
dependency (`access`) reads the raw body to show it to the `Auth` handler: a malformed
body reached it unvalidated (`{"namespace_prefix": true}` was a 500). This dependency,
first after authentication on every API route, answers such a body with the 422 FastAPI
would have given, naming the field, before any handler or route code sees it.
"""

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


async def parsed_body(request: Request) -> Any:
    """The JSON body as the route's model validated it; None without a JSON body.

    The JSON as sent where the route has no body model. A body the model refuses raises the 422
    FastAPI would answer. Parsed once per request: the authorization dependency reads it too.
    """
    state = request.scope.setdefault("state", {})
    if "graphwright_body" in state:
        return state["graphwright_body"]
    value = await _parse(request)
    state["graphwright_body"] = value
    return value


async def _parse(request: Request) -> Any:
    if request.method not in WITH_BODY:
        return None
    raw = await request.body()
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None  # FastAPI answers the malformed JSON with its own 422
    field = getattr(request.scope.get("route"), "body_field", None)
    if field is None:
        return data
    try:
        return _adapter(field.field_info.annotation).validate_python(data)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)], body=data
        ) from exc


async def validated_body(request: Request) -> None:
    """422 for a body the route's model refuses.

    An absent or unparsable body is left to FastAPI, whose own 422 for it comes when it reads the
    body for the route.
    """
    await parsed_body(request)
