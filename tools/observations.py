"""A tool call and what the model is told about it: the call, its observation, typed errors.

Also the check of a call's arguments (`plan` and `authorize` ask it before a call runs, the
executor as it runs one) and the visible cap on a result's size.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from graphwright.tools.spec import ToolSpec

ErrorType = Literal[
    "unknown_tool",
    "invalid_arguments",
    "timeout",
    "not_found",
    "unavailable",
    "conflict",
    "in_progress",
    "outcome_unknown",
    "tool_error",
    "internal_error",
    "rejected",
]
TRUNCATION_MARKER = "\n…[truncated by graphwright: {dropped} of {total} characters omitted]"


class ToolError(BaseModel):
    """Why a call failed, as the model reads it, and whether a retry may help."""

    type: ErrorType
    message: str
    retryable: bool


class ToolCall(BaseModel):
    """A call as the model proposed it; `args` may be a raw string of bad JSON."""

    name: str
    args: dict[str, Any] | str
    id: str


class Observation(BaseModel):
    """What the model is told about a call, and what the trace records."""

    ok: bool
    tool: str
    call_id: str
    result: Any = None
    error: ToolError | None = None
    trust: Literal["trusted", "untrusted"] = "trusted"
    truncated: bool = False
    replayed: bool = False
    attempts: int = 1
    duration_ms: float = 0.0
    idempotency_key: str | None = None  # set for writes

    def for_model(self) -> str:
        """The text put in the ToolMessage."""
        if self.ok:
            body: dict[str, Any] = {"ok": True, "result": self.result}
        else:
            body = {"ok": False, "error": self.error.model_dump() if self.error else None}
        return json.dumps(body, ensure_ascii=False, default=str)


def failure(call: ToolCall, type_: ErrorType, message: str, retryable: bool) -> Observation:
    """A failed call's observation: its typed error and whether a retry may help."""
    return Observation(
        ok=False,
        tool=call.name,
        call_id=call.id,
        error=ToolError(type=type_, message=message, retryable=retryable),
    )


def describe_validation(exc: ValidationError) -> str:
    """One line per bad field, naming it, in words a model can act on."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_args(spec: ToolSpec, raw: dict[str, Any] | str) -> BaseModel:
    """Validate arguments against the tool's model (raises ValidationError or ValueError)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
            ) from exc
        if not isinstance(raw, dict):
            raise ValueError("arguments must be a JSON object")
    return spec.args_model.model_validate(raw)


def argument_problem(spec: ToolSpec, raw: dict[str, Any] | str) -> str | None:
    """Why `raw` fails the tool's schema, in the words `execute` would answer; None if valid.

    `plan` asks this before the policy: a call that cannot run is the model's to fix, not
    a reviewer's to approve.
    """
    try:
        parse_args(spec, raw)
    except ValidationError as exc:
        return describe_validation(exc)
    except ValueError as exc:
        return str(exc)
    return None


def cap(text: str, limit: int) -> tuple[str, bool]:
    """Cut `text` to `limit` characters with a visible marker."""
    if len(text) <= limit:
        return text, False
    marker = TRUNCATION_MARKER.format(dropped=len(text) - limit, total=len(text))
    return text[:limit] + marker, True


def outcome_unknown(call: ToolCall, key: str, why: str) -> Observation:
    """A write that may or may not have happened: the run stops for a reviewer."""
    obs = failure(
        call,
        "outcome_unknown",
        f"{why}; whether {call.name} took effect is unknown (idempotency key {key}); "
        "a reviewer decides: retry with the same key, mark it done, or reject",
        False,
    )
    return obs.model_copy(update={"idempotency_key": key})
