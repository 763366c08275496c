"""Run a proposed tool call: allowlist, validation, timeout, size cap, idempotency.

Every outcome is an `Observation` (`graphwright.tools.observations`, re-exported here).
Failures are observations with `ok=False` and a typed error, never exceptions that kill the
run and never a disguised success. Only infrastructure failures (Redis gone) are raised.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import redis
from pydantic import BaseModel, ValidationError

from graphwright.checkpoints.keys import Keys
from graphwright.tools.errors import ToolFailure
from graphwright.tools.observations import (
    ErrorType,
    Observation,
    ToolCall,
    ToolError,
    argument_problem,
    cap,
    describe_validation,
    failure,
    outcome_unknown,
    parse_args,
)
from graphwright.tools.records import Claim, Records, Spend, args_digest
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.runloop import on_run_loop, submit
from graphwright.tools.spec import ToolContext, ToolSpec
from graphwright_errors import ConfigurationError

__all__ = [
    "ErrorType",
    "Observation",
    "ToolCall",
    "ToolError",
    "ToolExecutor",
    "argument_problem",
    "cap",
    "describe_validation",
    "outcome_unknown",
    "parse_args",
]

log = logging.getLogger(__name__)

QUEUE_LIMIT_S = 60.0  # a call that cannot even start within this is refused, never run


class ToolExecutor:
    """Executes calls for one registry against one Redis (for idempotency records).

    Reads and writes run in separate bounded pools, so a write never queues behind
    hung reads; the time a call waits for a worker thread never counts against its
    timeout.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        client: redis.Redis,
        *,
        keys: Keys | None = None,
        record_ttl_s: int = 30 * 24 * 3600,
        max_workers: int = 8,
        write_workers: int = 4,
    ) -> None:
        self.registry = registry
        self.redis = client
        self.keys = keys or Keys()
        self.records = Records(client, self.keys, ttl_s=record_ttl_s)
        self._reads = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="gw-read")
        self._writes = ThreadPoolExecutor(max_workers=write_workers, thread_name_prefix="gw-write")

    def execute(
        self,
        call: ToolCall,
        *,
        thread_id: str,
        fence: int | None = None,
        retry: bool = False,
        spend: Spend | None = None,
    ) -> Observation:
        """Run `call`.

        `retry` re-runs a write whose outcome is unknown, under its key, using up the reviewer's
        decision `spend` as it claims the record.
        """
        spec = self.registry.get(call.name)
        if spec is None:
            allowed = ", ".join(self.registry.names())
            return failure(
                call,
                "unknown_tool",
                f"there is no tool named {call.name!r}; available: {allowed}",
                False,
            )
        try:
            args = parse_args(spec, call.args)
        except ValidationError as exc:
            return failure(call, "invalid_arguments", describe_validation(exc), False)
        except ValueError as exc:
            return failure(call, "invalid_arguments", str(exc), False)
        if spec.risk == "write":
            return self._write_once(
                spec, call, args, thread_id, fence, retry, spend if retry else None
            )
        return self._run_with_retries(spec, call, args, thread_id)

    async def aexecute(
        self,
        call: ToolCall,
        *,
        thread_id: str,
        fence: int | None = None,
        retry: bool = False,
        spend: Spend | None = None,
    ) -> Observation:
        """`execute` for a coroutine.

        Its record round trips and sync tools run in the loop's executor, an async tool on the loop.
        """
        return await asyncio.to_thread(
            self.execute, call, thread_id=thread_id, fence=fence, retry=retry, spend=spend
        )

    # --- writes: exactly once per idempotency key ---

    def idempotency_key(self, thread_id: str, call_id: str) -> str:
        return f"{thread_id}:{call_id}"

    def mark_done(
        self, call: ToolCall, result: str, *, thread_id: str, fence: int | None = None
    ) -> Observation:
        """A reviewer's word that a write whose outcome was unknown did happen, with its result."""
        key = self.idempotency_key(thread_id, call.id)
        obs = Observation(
            ok=True, tool=call.name, call_id=call.id, result=result, idempotency_key=key
        )
        claim = self.records.claim(
            thread_id,
            call.id,
            tool=call.name,
            key=key,
            fence=fence,
            digest=args_digest(call.name, call.args),
            reclaim=True,
        )
        if claim.outcome in ("conflict", "done"):
            return self._not_run(call, key, claim)
        self.records.settle(
            thread_id,
            call.id,
            attempt=claim.attempt,
            status="done",
            result=obs.model_dump_json(),
            fence=fence,
        )
        return obs

    def _write_once(
        self,
        spec: ToolSpec,
        call: ToolCall,
        args: BaseModel,
        thread_id: str,
        fence: int | None,
        retry: bool,
        spend: Spend | None = None,
    ) -> Observation:
        key = self.idempotency_key(thread_id, call.id)
        # A tool that dedupes on the key itself is safe to run again under the same key.
        claim = self.records.claim(
            thread_id,
            call.id,
            tool=spec.name,
            key=key,
            fence=fence,
            digest=args_digest(spec.name, call.args),
            reclaim=retry or spec.keyed,
            spend=spend,
        )
        if claim.outcome != "claimed":
            return self._not_run(call, key, claim)
        ctx = ToolContext(
            thread_id=thread_id,
            tool_call_id=call.id,
            idempotency_key=key,
            redis=self.redis,
            keys=self.keys,
        )
        obs, future = self._attempt(spec, call, args, ctx)
        obs = obs.model_copy(update={"idempotency_key": key})
        # The tool itself may not know (an MCP server that died mid-call): unknown as well.
        lost = obs.error is not None and obs.error.type == "outcome_unknown"
        if future is not None or lost:  # timed out, still running: its outcome is unknown for now
            why = (
                obs.error.message
                if lost and obs.error
                else (f"{spec.name} did not finish within {spec.timeout_s}s")
            )
            obs = outcome_unknown(call, key, why)
            self.records.settle(
                thread_id, call.id, attempt=claim.attempt, status="unknown", result="", fence=fence
            )
            if future is not None:
                future.add_done_callback(
                    lambda f: self._late(spec, call, thread_id, claim.attempt, f)
                )
            return obs
        # Recorded before returning: a resumed run or a retried node gets this result back.
        self.records.settle(
            thread_id,
            call.id,
            attempt=claim.attempt,
            status="done",
            result=obs.model_dump_json(),
            fence=fence,
        )
        return obs

    def _not_run(self, call: ToolCall, key: str, claim: Claim) -> Observation:
        if claim.outcome == "done" and claim.result:
            replay = Observation.model_validate_json(claim.result)
            return replay.model_copy(update={"replayed": True})
        if claim.outcome == "conflict":
            return failure(
                call,
                "conflict",
                f"call id {call.id} was already used for {call.name} with other "
                "arguments; nothing was run or replayed",
                False,
            )
        return outcome_unknown(
            call,
            key,
            "an earlier execution of this call never recorded its "
            "result (its process stopped, or it timed out)",
        )

    def _late(
        self, spec: ToolSpec, call: ToolCall, thread_id: str, attempt: str, future: Future[Any]
    ) -> None:
        """A timed-out write that finished after all: record its result if nobody moved on."""
        if future.cancelled() or future.exception() is not None:
            return
        obs = self._observation(spec, call, future.result())
        try:
            self.records.settle(
                thread_id,
                call.id,
                attempt=attempt,
                status="done",
                result=obs.model_dump_json(),
                fence=None,
                required="unknown",
            )
        except Exception:  # a callback thread has nobody to raise to
            log.exception(
                "the late result of %s (call %s) could not be recorded", spec.name, call.id
            )

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
            obs, _ = self._attempt(spec, call, args, ctx)
            retry = obs.error is not None and obs.error.retryable
            if not retry or attempts > spec.retry_reads:
                return obs.model_copy(update={"attempts": attempts})
            time.sleep(min(0.05 * 2**attempts, 1.0))

    def _start(self, spec: ToolSpec, args: BaseModel, ctx: ToolContext) -> Future[Any] | None:
        """Submit to the tool's pool and wait for it to start; None if it never could.

        An `async def` tool runs on the process's run loop instead: no pool thread to
        wait for, and a timeout cancels the coroutine rather than leaving it running.
        """
        if inspect.iscoroutinefunction(spec.func):
            if on_run_loop():
                raise ConfigurationError(
                    f"{spec.name} is async and was called through the "
                    "blocking ToolExecutor.execute on the run loop; "
                    "await ToolExecutor.aexecute there"
                )
            return submit(spec.func(args, ctx))
        started = threading.Event()

        def run() -> Any:
            started.set()
            return spec.func(args, ctx)

        future = (self._writes if spec.risk == "write" else self._reads).submit(run)
        if not started.wait(QUEUE_LIMIT_S) and future.cancel():
            return None
        started.wait()
        return future

    def _attempt(
        self, spec: ToolSpec, call: ToolCall, args: BaseModel, ctx: ToolContext
    ) -> tuple[Observation, Future[Any] | None]:
        """The observation, and the future when the call timed out and may still finish."""
        future = self._start(spec, args, ctx)
        start = time.perf_counter()
        if future is None:
            obs = failure(
                call,
                "unavailable",
                f"{spec.name} could not start: every worker was busy; it was not run",
                True,
            )
            return obs, None
        late: Future[Any] | None = None
        try:
            obs = self._observation(spec, call, future.result(timeout=spec.timeout_s))
        except FutureTimeout:
            # A thread cannot be killed: a write's late result is still recorded. A coroutine
            # is cancelled; a write it may have made stays unknown (the same gate asks).
            if inspect.iscoroutinefunction(spec.func):
                future.cancel()
            late = future
            obs = failure(
                call,
                "timeout",
                f"{spec.name} did not finish within {spec.timeout_s}s",
                spec.risk == "read",
            )
        except ToolFailure as exc:
            obs = failure(call, exc.kind, str(exc), exc.retryable)  # type: ignore[arg-type]
        except Exception as exc:  # a bug in a tool: recorded as ours, not the model's
            log.exception("tool %s raised", spec.name)
            obs = failure(
                call,
                "internal_error",
                f"{spec.name} failed inside graphwright: {type(exc).__name__}: {exc}",
                False,
            )
        update = {"trust": spec.trust, "duration_ms": (time.perf_counter() - start) * 1000}
        return obs.model_copy(update=update), late

    def _observation(self, spec: ToolSpec, call: ToolCall, result: Any) -> Observation:
        text = (
            result
            if isinstance(result, str)
            else json.dumps(result, ensure_ascii=False, default=str)
        )
        capped, truncated = cap(text, spec.max_result_chars)
        return Observation(
            ok=True,
            tool=spec.name,
            call_id=call.id,
            result=capped if truncated else result,
            truncated=truncated,
            trust=spec.trust,
        )
