"""Run a proposed tool call: allowlist, validation, timeout, size cap, idempotency.

Every outcome is an :class:`Observation`. Failures are observations with
``ok=False`` and a typed error, never exceptions that kill the run and never a
disguised success. Only infrastructure failures (Redis gone) are raised.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Literal

import redis
from pydantic import BaseModel, ValidationError

from checkpoints.errors import RedisUnavailableError
from checkpoints.keys import Keys
from tools.errors import ToolFailure
from tools.registry import ToolRegistry
from tools.spec import ToolContext, ToolSpec

log = logging.getLogger(__name__)

ErrorType = Literal[
    "unknown_tool",
    "invalid_arguments",
    "timeout",
    "not_found",
    "unavailable",
    "conflict",
    "in_progress",
    "tool_error",
    "internal_error",
    "rejected",
]
TRUNCATION_MARKER = "\n…[truncated by graphwright: {dropped} of {total} characters omitted]"
PENDING = b"__pending__"


class ToolError(BaseModel):
    type: ErrorType
    message: str
    retryable: bool


class ToolCall(BaseModel):
    """A call as the model proposed it; ``args`` may be a raw string of bad JSON."""

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

    def for_model(self) -> str:
        """The text put in the ToolMessage."""
        if self.ok:
            body: dict[str, Any] = {"ok": True, "result": self.result}
        else:
            body = {"ok": False, "error": self.error.model_dump() if self.error else None}
        return json.dumps(body, ensure_ascii=False, default=str)


def _failure(call: ToolCall, type_: ErrorType, message: str, retryable: bool) -> Observation:
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


def cap(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters with a visible marker."""
    if len(text) <= limit:
        return text, False
    marker = TRUNCATION_MARKER.format(dropped=len(text) - limit, total=len(text))
    return text[:limit] + marker, True


class ToolExecutor:
    """Executes calls for one registry against one Redis (for idempotency records)."""

    def __init__(
        self,
        registry: ToolRegistry,
        client: redis.Redis,
        *,
        keys: Keys | None = None,
        record_ttl_s: int = 30 * 24 * 3600,
        max_workers: int = 8,
    ) -> None:
        self.registry = registry
        self.redis = client
        self.keys = keys or Keys()
        self.record_ttl_s = record_ttl_s
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="gw-tool")

    def execute(self, call: ToolCall, *, thread_id: str) -> Observation:
        spec = self.registry.get(call.name)
        if spec is None:
            allowed = ", ".join(self.registry.names())
            return _failure(
                call,
                "unknown_tool",
                f"there is no tool named {call.name!r}; available: {allowed}",
                False,
            )
        try:
            args = parse_args(spec, call.args)
        except ValidationError as exc:
            return _failure(call, "invalid_arguments", describe_validation(exc), False)
        except ValueError as exc:
            return _failure(call, "invalid_arguments", str(exc), False)
        if spec.risk == "write":
            return self._write_once(spec, call, args, thread_id)
        return self._run_with_retries(spec, call, args, thread_id)

    # --- writes: exactly once per idempotency key ---

    def idempotency_key(self, thread_id: str, call_id: str) -> str:
        return f"{thread_id}:{call_id}"

    def _write_once(
        self, spec: ToolSpec, call: ToolCall, args: BaseModel, thread_id: str
    ) -> Observation:
        key = self.keys.idempotency(thread_id, call.id)
        claim_ttl = int(spec.timeout_s) + 60
        try:
            claimed = self.redis.set(key, PENDING, nx=True, ex=claim_ttl)
            # Listed in the thread's registry, so deleting the thread deletes the record.
            self.redis.sadd(self.keys.registry(thread_id), key)
            if not claimed:
                recorded = self.redis.get(key)
                if recorded is not None and recorded != PENDING:
                    replay = Observation.model_validate_json(self.keys.sealer.open(recorded))
                    return replay.model_copy(update={"replayed": True})
                return _failure(
                    call,
                    "in_progress",
                    f"call {call.id} is already running; wait for its result",
                    True,
                )
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"cannot record the idempotency key of {spec.name} ({exc}); the write was not run"
            ) from exc
        ctx = ToolContext(
            thread_id=thread_id,
            tool_call_id=call.id,
            idempotency_key=self.idempotency_key(thread_id, call.id),
            redis=self.redis,
            keys=self.keys,
        )
        obs = self._attempt(spec, call, args, ctx)
        # Record before returning: a resumed run or a retried node gets this result back.
        try:
            self.redis.set(key, self.keys.sealer.seal_text(obs.model_dump_json()), ex=self.record_ttl_s)
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"{spec.name} ran (call {call.id}) but its result could not be recorded ({exc}); "
                "its pending claim expires, so check the effect before running it again"
            ) from exc
        return obs

    # --- reads: bounded retries on retryable failures ---

    def _run_with_retries(
        self, spec: ToolSpec, call: ToolCall, args: BaseModel, thread_id: str
    ) -> Observation:
        ctx = ToolContext(
            thread_id=thread_id,
            tool_call_id=call.id,
            idempotency_key=None,
            redis=self.redis,
            keys=self.keys,
        )
        attempts = 0
        while True:
            attempts += 1
            obs = self._attempt(spec, call, args, ctx)
            retry = obs.error is not None and obs.error.retryable
            if not retry or attempts > spec.retry_reads:
                return obs.model_copy(update={"attempts": attempts})
            time.sleep(min(0.05 * 2**attempts, 1.0))

    def _attempt(
        self, spec: ToolSpec, call: ToolCall, args: BaseModel, ctx: ToolContext
    ) -> Observation:
        start = time.perf_counter()
        future = self._pool.submit(spec.func, args, ctx)
        try:
            result = future.result(timeout=spec.timeout_s)
        except FutureTimeout:
            # The worker thread cannot be killed; its result, if any, is discarded.
            outcome = "the effect may or may not have happened" if spec.risk == "write" else ""
            obs = _failure(
                call,
                "timeout",
                f"{spec.name} did not finish within {spec.timeout_s}s {outcome}".strip(),
                spec.risk == "read",
            )
        except ToolFailure as exc:
            obs = _failure(call, exc.kind, str(exc), exc.retryable)  # type: ignore[arg-type]
        except Exception as exc:  # a bug in a tool: recorded as ours, not the model's
            log.exception("tool %s raised", spec.name)
            obs = _failure(
                call,
                "internal_error",
                f"{spec.name} failed inside graphwright: {type(exc).__name__}: {exc}",
                False,
            )
        else:
            text = (
                result
                if isinstance(result, str)
                else json.dumps(result, ensure_ascii=False, default=str)
            )
            capped, truncated = cap(text, spec.max_result_chars)
            obs = Observation(
                ok=True,
                tool=spec.name,
                call_id=call.id,
                result=capped if truncated else result,
                truncated=truncated,
            )
        return obs.model_copy(
            update={
                "trust": spec.trust,
                "duration_ms": (time.perf_counter() - start) * 1000,
            }
        )
