"""``Orchestrator``: invoke named graphs, resume them from Redis, inspect and draw them.

The CLI and the HTTP service are thin layers over this class.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import redis
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from checkpoints.connect import connect
from checkpoints.errors import (
    GraphwrightError,
    InfrastructureError,
    NotFoundError,
    RedisUnavailableError,
    UserError,
)
from checkpoints.keys import Keys, escape
from checkpoints.memory import MemoryBook, MemoryRecord, Source, effective, scope_of
from checkpoints.redis import RedisSaver
from checkpoints.sealed import sealer_from_env
from checkpoints.server_check import check_server
from checkpoints.store import RedisStore
from checkpoints.trace import TraceWriter
from graphs.gates import gate_command, pending_gate
from graphs.registry import (
    Graph,
    GraphContext,
    GraphRegistry,
    GraphSpec,
    RunInput,
    default_registry,
)
from graphwright import drawing
from graphwright.inputs import load_plugin, parse_input, user_messages
from graphwright.locking import held, thread_lock
from graphwright.models import make_model
from graphwright.remember import extract
from graphwright.results import (
    CheckpointInfo,
    RunResult,
    RunStatus,
    StepEvent,
    ThreadInfo,
    ThreadState,
    Usage,
)
from graphwright.serialize import jsonable
from graphwright.settings import Settings
from graphwright.store import redis_url
from graphwright.streaming import in_thread, last_result
from nodes.deps import Limits
from nodes.gate_models import GateRequest
from tools.policy import Policy

log = logging.getLogger(__name__)
SEALED_META = frozenset({"metadata", "remember"})  # thread fields that hold the user's text


class Orchestrator:
    """The one entry point: every run, resume, inspection and drawing goes through here."""

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        model: BaseChatModel | None = None,
        client: redis.Redis | None = None,
        graphs: GraphRegistry | None = None,
        limits: Limits | None = None,
        policy: Policy | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.client: redis.Redis = client if client is not None else self._connect()
        client = self.client
        self.sealer = sealer_from_env(encrypt=self.settings.encrypt)
        self.keys = Keys(prefix=self.settings.key_prefix, sealer=self.sealer)
        self.saver = RedisSaver(
            client, prefix=self.settings.key_prefix, ttl_s=self.settings.checkpoint_ttl_s,
            encrypt=self.settings.encrypt,
        )
        self.model = model or make_model(self.settings)
        self.graphs = graphs or default_registry()
        self.limits = limits or self.settings.limits()
        self.policy = policy
        self.tracer = TraceWriter(client, self.keys, ttl_s=self.settings.checkpoint_ttl_s)
        self.store = RedisStore(client, prefix=self.settings.key_prefix, sealer=self.sealer)
        self.memory = MemoryBook(self.store)
        self._compiled: dict[tuple[str, str], Graph] = {}
        for target in filter(None, (self.settings.graphs or "").split(",")):
            load_plugin(target.strip(), self.graphs)

    def _connect(self) -> redis.Redis:
        client: redis.Redis = connect(redis_url(self.settings), cluster=self.settings.redis_cluster)
        try:
            check_server(client, refuse_eviction=self.settings.refuse_eviction)
        except redis.ConnectionError:
            log.debug("Redis not reachable at start; the first operation reports it")
        return client

    @classmethod
    def from_env(cls, **overrides: Any) -> Orchestrator:
        """Settings from the environment and ``.env``; embedded Redis and offline model by default."""
        return cls(settings=Settings(), **overrides)

    # --- running -------------------------------------------------------------

    def invoke(
        self, graph: str, input: str | dict[str, Any] | RunInput, *,
        thread_id: str | None = None, limits: Limits | None = None, run_id: str | None = None,
        user_id: str | None = None,
    ) -> RunResult:
        """Start a run on a new thread (or a finished one) and run it until it ends or waits.

        With ``user_id``, the user's long-term memories are recalled for the run, and
        what the user explicitly asks to be remembered is stored when it ends.
        """
        return last_result(self.stream(graph, input, thread_id=thread_id, limits=limits, run_id=run_id,
                                 user_id=user_id))

    def resume(
        self, thread_id: str, decision: Any = None, *, limits: Limits | None = None,
        run_id: str | None = None,
    ) -> RunResult:
        """Answer the pending gate, or continue a run whose process died, from its checkpoint."""
        return last_result(self.stream_resume(thread_id, decision, limits=limits, run_id=run_id))

    def stream(
        self, graph: str, input: str | dict[str, Any] | RunInput, *,
        thread_id: str | None = None, limits: Limits | None = None, run_id: str | None = None,
        user_id: str | None = None,
    ) -> Iterator[StepEvent]:
        """Like ``invoke``, yielding each step as it happens and the result last."""
        spec = self.graphs.get(graph)
        run_input = parse_input(input)
        scopes = self._scopes(user_id) if user_id is not None else []  # checked before any read
        thread_id = thread_id or f"{graph}-{uuid.uuid4().hex[:12]}"
        with thread_lock(self.client, self.keys, thread_id):
            meta = self._meta(thread_id)
            if meta.get("graph") and meta["graph"] != graph:
                raise UserError(f"thread {thread_id!r} belongs to graph {meta['graph']!r}, not {graph!r}")
            compiled = self._graph(spec, limits)
            if meta:
                snapshot = compiled.get_state(self._config(thread_id))
                if snapshot.interrupts:
                    raise UserError(f"thread {thread_id!r} is waiting at a gate; answer it with "
                                    "resume, or start the new run on another thread")
                if snapshot.next:
                    raise UserError(f"thread {thread_id!r} has an unfinished run (its process "
                                    "stopped mid-step); resume it first")
            payload = spec.make_input(run_input) if spec.make_input else run_input.model_dump()
            if scopes:
                self._set_meta(thread_id, user_id=str(user_id),
                               remember=json.dumps(user_messages(payload, run_input)))
                if spec.uses_memory:
                    payload["memories"] = [
                        f"{r.kind} {r.key}: {r.value}"
                        for r in effective(self.memory.recall(scopes))
                    ]
            yield from self._run(spec, compiled, thread_id, payload, run_input, run_id)

    def stream_resume(
        self, thread_id: str, decision: Any = None, *, limits: Limits | None = None,
        run_id: str | None = None,
    ) -> Iterator[StepEvent]:
        """Like ``resume``, yielding each step as it happens and the result last."""
        meta = self._meta(thread_id)
        if not meta.get("graph"):
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        spec = self.graphs.get(meta["graph"])
        with thread_lock(self.client, self.keys, thread_id):
            compiled = self._graph(spec, limits)
            config = self._config(thread_id)
            snapshot = compiled.get_state(config)
            payload: Any
            if pending_gate(compiled, config) is not None:
                if decision is None:
                    raise UserError(f"thread {thread_id!r} is waiting at a gate; give a decision "
                                    "(approve, edit or reject)")
                payload = gate_command(compiled, config, decision, spec.tools())
            elif snapshot.interrupts:
                payload = Command(resume=decision)  # a user graph's own interrupt
            elif snapshot.next:
                if decision is not None:
                    raise UserError(f"thread {thread_id!r} is not waiting at a gate; resume it "
                                    "without a decision")
                payload = None
            else:
                status = self.status_of(meta)
                raise UserError(f"thread {thread_id!r} has already finished ({status}); there is "
                                "nothing to resume; start a new run with invoke")
            yield from self._run(spec, compiled, thread_id, payload, None, run_id)

    async def ainvoke(self, graph: str, input: str | dict[str, Any] | RunInput, *,
                      thread_id: str | None = None, limits: Limits | None = None) -> RunResult:
        return await asyncio.to_thread(self.invoke, graph, input, thread_id=thread_id, limits=limits)

    async def aresume(self, thread_id: str, decision: Any = None, *,
                      limits: Limits | None = None) -> RunResult:
        return await asyncio.to_thread(self.resume, thread_id, decision, limits=limits)

    async def astream(self, graph: str, input: str | dict[str, Any] | RunInput, *,
                      thread_id: str | None = None, limits: Limits | None = None,
                      ) -> AsyncIterator[StepEvent]:
        async for event in in_thread(lambda: self.stream(graph, input, thread_id=thread_id,
                                                         limits=limits)):
            yield event

    async def astream_resume(self, thread_id: str, decision: Any = None, *,
                             limits: Limits | None = None) -> AsyncIterator[StepEvent]:
        async for event in in_thread(lambda: self.stream_resume(thread_id, decision, limits=limits)):
            yield event

    def create_thread(self, thread_id: str | None = None, metadata: dict[str, Any] | None = None) -> str:
        """Register an empty thread (the HTTP service's ``threads.create``); runs pick its graph."""
        thread_id = thread_id or str(uuid.uuid4())
        if self._meta(thread_id):
            raise UserError(f"thread {thread_id!r} already exists")
        self._set_meta(thread_id, thread_id=thread_id, created_at=str(time.time()),
                       metadata=json.dumps(metadata or {}))
        return thread_id

    def memories(self, user_id: str) -> list[MemoryRecord]:
        """The user's records and the project's, oldest update first."""
        return self.memory.recall(self._scopes(user_id))

    def forget(self, user_id: str, key: str) -> bool:
        """Remove the user's record under ``key`` from every later recall."""
        return self.memory.forget(scope_of("user", user_id), key)

    def _scopes(self, user_id: str) -> list[str]:
        return [scope_of("user", user_id), scope_of("project", self.settings.project)]

    def _remember(self, thread_id: str, run_id: str) -> None:
        """Store what the user's own messages of this run asked to be remembered."""
        meta = self._meta(thread_id)
        if not meta.get("user_id") or not meta.get("remember"):
            return
        messages = json.loads(meta["remember"])
        self._set_meta(thread_id, remember="")
        try:
            found = extract(self.model, messages)
        except ValueError as exc:
            self.tracer.emit(thread_id, "remember", run_id=run_id, stored=[], error=str(exc))
            return
        known = {m.get("id") for m in messages}
        stored = []
        for c in found.memories:
            source = Source(thread_id=thread_id, message_id=c.message_id if c.message_id in known else None)
            record = self.memory.remember(scope_of("user", meta["user_id"]), c.kind, c.key, c.value, source)
            stored.append({"key": record.key, "value": record.value, "scope": record.scope})
        self.tracer.emit(thread_id, "remember", run_id=run_id, stored=stored)

    def meta(self, thread_id: str) -> dict[str, str]:
        """The thread's stored metadata (graph, status, times); empty for an unknown thread."""
        return self._meta(thread_id)

    # --- inspecting ----------------------------------------------------------

    def state(self, thread_id: str) -> ThreadState:
        spec, compiled, config = self._thread(thread_id)
        snapshot = compiled.get_state(config)
        return ThreadState(
            thread_id=thread_id, graph=spec.name, status=self.status_of(self._meta(thread_id)),
            values=jsonable(snapshot.values), next=list(snapshot.next),
            pending=pending_gate(compiled, config),
            checkpoint_id=(snapshot.config.get("configurable") or {}).get("checkpoint_id"),
        )

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """Checkpoints, newest first, each with the node(s) that produced it and its step."""
        _, compiled, config = self._thread(thread_id)
        snapshots = list(compiled.get_state_history(config))
        out = []
        for i, snap in enumerate(snapshots):
            older = snapshots[i + 1] if i + 1 < len(snapshots) else None
            meta = snap.metadata or {}
            out.append(CheckpointInfo(
                checkpoint_id=str((snap.config.get("configurable") or {}).get("checkpoint_id")),
                step=int(meta.get("step", -1)),
                node=list(older.next) if older else [],
                next=list(snap.next),
                source=meta.get("source"),
                created_at=snap.created_at,
            ))
        return out

    def snapshots(self, thread_id: str, limit: int | None = None) -> list[Any]:
        """LangGraph's own ``StateSnapshot`` objects, newest first (the HTTP service's history)."""
        _, compiled, config = self._thread(thread_id)
        return list(compiled.get_state_history(config, limit=limit))

    def snapshot(self, thread_id: str) -> Any:
        """LangGraph's ``StateSnapshot`` of the thread now."""
        _, compiled, config = self._thread(thread_id)
        return compiled.get_state(config)

    def trace(self, thread_id: str) -> list[dict[str, Any]]:
        self._thread(thread_id)
        return self.tracer.read(thread_id)

    def threads(self) -> list[ThreadInfo]:
        out = []
        for thread_id, updated_ms in self.saver.threads():
            meta = self._meta(thread_id)
            out.append(ThreadInfo(thread_id=thread_id, graph=meta.get("graph"),
                                  status=self.status_of(meta), updated_at=updated_ms / 1000))
        return out

    def delete(self, thread_id: str) -> None:
        """Remove every key of the thread: checkpoints, trace, metadata, idempotency records."""
        if not self._meta(thread_id):
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        with thread_lock(self.client, self.keys, thread_id):
            self.saver.delete_thread(thread_id)
            self.client.delete(self.keys.meta(thread_id))

    def draw(self, graph: str, format: drawing.Format = "mermaid", thread_id: str | None = None) -> str:
        """The graph as Mermaid, ASCII, SVG or a self-contained HTML page; never uses the network."""
        spec = self.graphs.get(graph)
        compiled = self._graph(spec, None)
        path = None
        if thread_id is not None:
            meta = self._meta(thread_id)
            if meta.get("graph") != graph:
                raise NotFoundError(f"no thread {thread_id!r} of graph {graph!r}")
            path = drawing.path_of(compiled, self._config(thread_id))
        return drawing.render(compiled, format, path, title=graph)

    async def astate(self, thread_id: str) -> ThreadState:
        return await asyncio.to_thread(self.state, thread_id)

    async def ahistory(self, thread_id: str) -> list[CheckpointInfo]:
        return await asyncio.to_thread(self.history, thread_id)

    async def atrace(self, thread_id: str) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.trace, thread_id)

    async def athreads(self) -> list[ThreadInfo]:
        return await asyncio.to_thread(self.threads)

    async def adelete(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete, thread_id)

    async def adraw(self, graph: str, format: drawing.Format = "mermaid",
                    thread_id: str | None = None) -> str:
        return await asyncio.to_thread(self.draw, graph, format, thread_id)

    # --- internals -----------------------------------------------------------

    def compiled(self, graph: str) -> Graph:
        """The compiled graph registered as ``graph`` (default limits)."""
        return self._graph(self.graphs.get(graph), None)

    def _graph(self, spec: GraphSpec, limits: Limits | None) -> Graph:
        limits = limits or self.limits
        key = (spec.name, limits.model_dump_json())
        if key not in self._compiled:
            self._compiled[key] = spec.build(GraphContext(
                model=self.model, redis_client=self.client, keys=self.keys,
                checkpointer=self.saver, limits=limits, policy=self.policy, store=self.store,
            ))
        return self._compiled[key]

    def _config(self, thread_id: str, run_id: str | None = None) -> RunnableConfig:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        if run_id:
            config["run_id"] = uuid.UUID(run_id)
            config["recursion_limit"] = 10_000  # budgets in Limits end runs, not this counter
        return config

    def _thread(self, thread_id: str) -> tuple[GraphSpec, Graph, RunnableConfig]:
        meta = self._meta(thread_id)
        if not meta.get("graph"):
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        spec = self.graphs.get(meta["graph"])
        return spec, self._graph(spec, None), self._config(thread_id)

    def _meta(self, thread_id: str) -> dict[str, str]:
        try:
            raw = self.client.hgetall(self.keys.meta(thread_id))
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        return {_text(k): self.sealer.open_text(v) if _text(k) in SEALED_META else _text(v)
                for k, v in raw.items()}

    def _set_meta(self, thread_id: str, /, **fields: str) -> None:
        key = self.keys.meta(thread_id)
        try:
            with self.client.pipeline(transaction=True) as pipe:  # one slot: the thread's
                mapping = {k: self.sealer.seal_text(v) if k in SEALED_META else v
                           for k, v in {**fields, "updated_at": str(time.time())}.items()}
                pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]  # redis-py's mapping type is invariant
                pipe.sadd(self.keys.registry(thread_id), key)
                pipe.execute()
            # The threads index the saver keeps, so threads with no checkpoint yet are listed.
            # It lives on another cluster slot, so it is written on its own (idempotent).
            self.client.zadd(self.keys.threads(), {escape(thread_id): int(time.time() * 1000)})
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc

    def status_of(self, meta: dict[str, str]) -> Any:
        """The thread's status; a run whose process died reads as failed."""
        status = meta.get("status")
        if status == "running" and not held(self.client, self.keys, meta.get("thread_id", "")):
            return "failed"  # its process died mid-step; resume continues it
        return status

    def _run(
        self, spec: GraphSpec, compiled: Graph, thread_id: str, payload: Any,
        run_input: RunInput | None, run_id: str | None = None,
    ) -> Iterator[StepEvent]:
        run_id = run_id or str(uuid.uuid4())
        config = self._config(thread_id, run_id)
        self._set_meta(thread_id, graph=spec.name, status="running", thread_id=thread_id)
        started = self.tracer.emit(thread_id, "run_start", run_id=run_id, graph=spec.name,
                                   input=run_input.model_dump() if run_input else None,
                                   resumed=run_input is None)
        if run_input is not None:  # usage counts from here, across later resumes
            self._set_meta(thread_id, trace_from=started)
        error = None
        try:
            for chunk in compiled.stream(payload, config, stream_mode="updates"):
                for node, update in chunk.items():
                    yield StepEvent(thread_id=thread_id,
                                    kind="interrupt" if node == "__interrupt__" else "step", node=node,
                                    update=jsonable(update if isinstance(update, dict) else
                                                    {"interrupts": update}))
        except GraphwrightError:
            self._set_meta(thread_id, status="failed")
            raise
        except Exception as exc:  # a model API or tool-stack failure: the run fails, resumable
            log.exception("run %s on thread %s failed", run_id, thread_id)
            error = f"{type(exc).__name__}: {exc}"
        result = self._result(spec, compiled, thread_id, run_id, error)
        self._set_meta(thread_id, status=result.status)
        if result.status in ("completed", "stopped"):
            self._remember(thread_id, run_id)
        yield StepEvent(thread_id=thread_id, kind="result", result=result)

    def _result(
        self, spec: GraphSpec, compiled: Graph, thread_id: str, run_id: str, error: str | None
    ) -> RunResult:
        config = self._config(thread_id)
        snapshot = compiled.get_state(config)
        values = snapshot.values or {}
        pending = pending_gate(compiled, config)
        status: RunStatus
        if error:
            status = "failed"
        elif snapshot.interrupts:
            status = "interrupted"
        elif snapshot.next:
            status, error = "failed", f"the run stopped before {list(snapshot.next)}"
        elif values.get("stop_reason") in (None, "answered"):
            status = "completed"
        else:
            status = "stopped"
        since = self.tracer.read(thread_id, self._meta(thread_id).get("trace_from") or "-")
        return RunResult(
            thread_id=thread_id, graph=spec.name, run_id=run_id, status=status,
            answer=values.get("answer"), stop_reason=values.get("stop_reason"),
            pending=pending if status == "interrupted" else None,
            steps=int((snapshot.metadata or {}).get("step", 0)),
            usage=Usage(
                tokens=int(values.get("tokens") or 0),
                model_calls=sum(e["kind"] == "model_call" for e in since),
                tool_calls=sum(e["kind"] == "tool_call" for e in since),
            ),
            error=error,
        )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _unavailable(exc: Exception) -> InfrastructureError:
    return RedisUnavailableError(f"Redis is not reachable ({exc}); check REDIS_URL or the embedded server")


__all__ = ["GateRequest", "Orchestrator", "parse_input"]
