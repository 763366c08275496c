"""``Orchestrator``: invoke named graphs, resume them from Redis, inspect and draw them.

The CLI and the HTTP service are thin layers over this class.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

import redis
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from redis.cluster import RedisCluster

from checkpoints.errors import EvictingServerError, LockLostError, RedisUnavailableError
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
from graphwright.connect import connect
from graphwright.inputs import load_plugin, parse_input, user_messages
from graphwright.locking import ThreadLock, held, thread_lock
from graphwright.models import make_model
from graphwright.native import answer_of, own_input
from graphwright.project import Project, find_config, load_project, run_configurable
from graphwright.remember import ExtractionError, extract
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
from graphwright.streaming import StreamMode, in_thread, last_result, step_events
from graphwright.thread_index import ThreadIndex
from graphwright_errors import GraphwrightError, InfrastructureError, NotFoundError, UserError
from nodes.deps import Limits
from nodes.gate_models import GateRequest
from nodes.tracing import trace_model_call
from tools.mcp_config import ServerConfig, load_mcp_servers, parse_mcp_servers
from tools.policy import Policy
from tools.registry import ToolRegistry
from tools.spec import ToolSpec

log = logging.getLogger(__name__)
MAX_COMPILED = 256  # compiled graphs kept, by graph, limits and (for factories) configuration
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
        project: Project | None = None,
        mcp_servers: Mapping[str, Any] | None = None,
    ) -> None:
        """``mcp_servers`` (an ``mcpServers`` mapping) adds to GRAPHWRIGHT_MCP_SERVERS."""
        self.settings = settings or Settings()
        self.project = project
        self.client: redis.Redis = client if client is not None else self._connect()
        client = self.client
        self.sealer = sealer_from_env(encrypt=self.settings.encrypt)
        self.keys = Keys(prefix=self.settings.key_prefix, sealer=self.sealer)
        self.saver = RedisSaver(
            client, prefix=self.settings.key_prefix,
            ttl_s=(project.checkpoint_ttl_s() if project else None) or self.settings.checkpoint_ttl_s,
            encrypt=self.settings.encrypt,
        )
        self.model = model or make_model(self.settings)
        self.graphs = graphs or default_registry()
        self.limits = limits or self.settings.limits()
        self.policy = policy
        self.tracer = TraceWriter(client, self.keys, ttl_s=self.settings.checkpoint_ttl_s)
        self.store = RedisStore(client, prefix=self.settings.key_prefix, sealer=self.sealer,
                                index=project.store_index() if project else None,
                                ttl=project.store_ttl() if project else None)
        self.memory = MemoryBook(self.store)
        self.index = ThreadIndex(client, self.keys)
        self._compiled: dict[tuple[str, str, str], Graph] = {}
        configured = self.settings.mcp_servers
        self.mcp_servers: dict[str, ServerConfig] = {
            **(load_mcp_servers(configured) if configured else {}),
            **parse_mcp_servers(mcp_servers or {}),
        }
        self._extra_tools: tuple[ToolSpec, ...] | None = None
        for target in filter(None, (self.settings.graphs or "").split(",")):
            load_plugin(target.strip(), self.graphs)
        if project is not None:
            project.register(self.graphs)

    def _connect(self) -> redis.Redis:
        client: redis.Redis = connect(redis_url(self.settings), cluster=self.settings.redis_cluster,
                                      retry_budget_s=self.settings.redis_retry_s)
        try:
            check_server(client, refuse_eviction=self.settings.refuse_eviction)
        except EvictingServerError as exc:
            raise EvictingServerError(f"{exc} (refused because GRAPHWRIGHT_REFUSE_EVICTION is set)") from exc
        except redis.ConnectionError:
            log.debug("Redis not reachable at start; the first operation reports it")
        return client

    @classmethod
    def from_env(cls, **overrides: Any) -> Orchestrator:
        """Settings from the environment and ``.env``; embedded Redis and offline model by default.

        A ``langgraph.json`` named by ``GRAPHWRIGHT_CONFIG``, or in the working directory,
        adds its graphs (see ``from_config``).
        """
        path = find_config(os.environ.get("GRAPHWRIGHT_CONFIG") or None)
        if path is not None:
            return cls.from_config(path, **overrides)
        return cls(settings=Settings(), **overrides)

    @classmethod
    def from_config(cls, path: str | os.PathLike[str], **overrides: Any) -> Orchestrator:
        """Serve the LangGraph project described by the ``langgraph.json`` at ``path``.

        Its env is applied before the settings are read, its dependencies go on
        ``sys.path``, and its graphs are registered beside graphwright's own.
        """
        project = load_project(path)
        project.apply()
        overrides.setdefault("settings", Settings())
        return cls(project=project, **overrides)

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
        user_id: str | None = None, mode: StreamMode = "steps",
    ) -> Iterator[StepEvent]:
        """Like ``invoke``, yielding each step as it happens and the result last.

        With ``mode="messages"`` the model's tokens come too, as ``kind="token"`` events
        (``text``, ``message_id``, ``node``, ``run_id``, ``namespace``: see ``StepEvent``),
        each before the step event of the node that called the model.
        """
        spec = self.graphs.get(graph)
        run_input = None if spec.native_input else parse_input(input)
        scopes = self._scopes(user_id) if user_id is not None else []  # checked before any read
        thread_id = thread_id or f"{graph}-{uuid.uuid4().hex[:12]}"
        with self._lock(thread_id) as lock:
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
            if run_input is None:  # a langgraph.json graph: its own input, as given
                payload = own_input(compiled, graph, input)
                yield from self._run(spec, compiled, thread_id, payload, payload, run_id)
                return
            payload = spec.make_input(run_input) if spec.make_input else run_input.model_dump()
            if scopes:
                self._set_meta(thread_id, user_id=str(user_id),
                               remember=json.dumps(user_messages(payload, run_input)))
                if spec.uses_memory:
                    payload["memories"] = [
                        f"{r.kind} {r.key}: {r.value}"
                        for r in effective(self.memory.recall(scopes))
                    ]
            yield from self._run(spec, compiled, thread_id, payload, run_input, run_id, lock, mode)

    def stream_resume(
        self, thread_id: str, decision: Any = None, *, limits: Limits | None = None,
        run_id: str | None = None, decide: Callable[[GateRequest], Any] | None = None,
        mode: StreamMode = "steps",
    ) -> Iterator[StepEvent]:
        """Like ``resume``, yielding each step (and, in ``"messages"`` mode, token) as it happens.

        ``decide`` builds the decision from the pending gate, read under the thread's lock
        (so a second reviewer racing the first is told the thread is running elsewhere).
        """
        meta = self._meta(thread_id)
        if not meta.get("graph"):
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        spec = self.graphs.get(meta["graph"])
        with self._lock(thread_id) as lock:
            compiled = self._graph(spec, limits)
            config = self._config(thread_id)
            snapshot = compiled.get_state(config)
            payload: Any
            gate = pending_gate(compiled, config)
            if decide is not None:
                if gate is None:
                    raise UserError(f"thread {thread_id!r} is not waiting at a gate; resume it "
                                    "without a decision")
                decision = decide(gate)
            if gate is not None:
                if decision is None:
                    raise UserError(f"thread {thread_id!r} is waiting at a gate; give a decision "
                                    "(approve, edit or reject)")
                payload = gate_command(compiled, config, decision, self.tools(spec.name))
            elif snapshot.interrupts:
                payload = Command(resume=decision)  # a user graph's own interrupt
            elif snapshot.next:
                if decision is not None:
                    raise UserError(f"thread {thread_id!r} is not waiting at a gate; resume it "
                                    "without a decision")
                payload = None
            else:
                status = self._status(meta, snapshot)
                if status != meta.get("status"):  # its process died after the last step
                    self._set_meta(thread_id, status=str(status))
                raise UserError(f"thread {thread_id!r} has already finished ({status}); there is "
                                "nothing to resume; start a new run with invoke")
            yield from self._run(spec, compiled, thread_id, payload, None, run_id, lock, mode)

    async def ainvoke(self, graph: str, input: str | dict[str, Any] | RunInput, *,
                      thread_id: str | None = None, limits: Limits | None = None) -> RunResult:
        return await asyncio.to_thread(self.invoke, graph, input, thread_id=thread_id, limits=limits)

    async def aresume(self, thread_id: str, decision: Any = None, *,
                      limits: Limits | None = None) -> RunResult:
        return await asyncio.to_thread(self.resume, thread_id, decision, limits=limits)

    async def astream(self, graph: str, input: str | dict[str, Any] | RunInput, *,
                      thread_id: str | None = None, limits: Limits | None = None,
                      run_id: str | None = None, user_id: str | None = None,
                      mode: StreamMode = "steps") -> AsyncIterator[StepEvent]:
        """``stream`` for asyncio: the same events, the run driven in a worker thread."""
        async for event in in_thread(lambda: self.stream(graph, input, thread_id=thread_id,
                                                         limits=limits, run_id=run_id,
                                                         user_id=user_id, mode=mode)):
            yield event

    async def astream_resume(self, thread_id: str, decision: Any = None, *,
                             limits: Limits | None = None, run_id: str | None = None,
                             mode: StreamMode = "steps") -> AsyncIterator[StepEvent]:
        """``stream_resume`` for asyncio."""
        async for event in in_thread(lambda: self.stream_resume(thread_id, decision, limits=limits,
                                                                run_id=run_id, mode=mode)):
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
        started = time.time()
        config = self._config(thread_id, run_id)
        try:
            found, reply = extract(self.model, messages)
        except ExtractionError as exc:
            if exc.reply is not None:  # the call happened and used tokens
                trace_model_call(self.tracer, config, node="remember", step=0, reply=exc.reply,
                                 started=started)
            self.tracer.emit(thread_id, "remember", run_id=run_id, stored=[], error=str(exc))
            return
        trace_model_call(self.tracer, config, node="remember", step=0, reply=reply, started=started)
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

    def update_meta(self, thread_id: str, /, **fields: str) -> None:
        """Set fields of the thread's meta hash (the HTTP service's metadata, TTL, graph)."""
        self._set_meta(thread_id, **fields)

    def refresh_ttl(self, thread_id: str) -> None:
        """Restart the thread's own TTL (``threads.create(ttl=...)``) on every key it has now."""
        ttl = self._meta(thread_id).get("ttl_s")
        if not ttl:
            return
        seconds = int(float(ttl))
        registry = self.keys.registry(thread_id)
        members = [m.decode() if isinstance(m, bytes) else m
                   for m in self.client.smembers(registry)]
        with self.client.pipeline(transaction=True) as pipe:
            for key in [*members, registry, self.keys.meta(thread_id)]:
                pipe.expire(key, seconds)
            pipe.execute()
        self.index.set_expiry(thread_id, time.time() + seconds)

    # --- inspecting ----------------------------------------------------------

    def state(self, thread_id: str) -> ThreadState:
        spec, compiled, config = self._thread(thread_id)
        snapshot = compiled.get_state(config)
        return ThreadState(
            thread_id=thread_id, graph=spec.name, status=self._status(self._meta(thread_id), snapshot),
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
        if not self._meta(thread_id):  # a thread created but never run is deletable too
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        with self._lock(thread_id):
            self.saver.delete_thread(thread_id)
            # Without its fence counter, every token of the thread's earlier runs is refused.
            self.client.delete(self.keys.meta(thread_id), self.keys.fence(thread_id))
        self.index.forget([thread_id])

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

    def extra_tools(self) -> tuple[ToolSpec, ...]:
        """The MCP servers' tools; the servers start on first use, once per process."""
        if self._extra_tools is None:
            self._extra_tools = ()
            if self.mcp_servers:
                from tools.mcp import tool_specs  # the MCP SDK only when servers are configured

                self._extra_tools = tuple(tool_specs(self.mcp_servers))
        return self._extra_tools

    def tools(self, graph: str = "agent") -> ToolRegistry:
        """Every tool a run of ``graph`` may call: its own and the configured ones."""
        registry = self.graphs.get(graph).tools()
        for spec in self.extra_tools():
            if registry.get(spec.name) is None:
                registry.add(spec)
        return registry

    def compiled(self, graph: str, config: RunnableConfig | None = None) -> Graph:
        """The compiled graph registered as ``graph`` (default limits).

        A graph built from the run's config (a ``langgraph.json`` factory) is built for
        the ``configurable`` values of ``config``, like ``langgraph dev`` does per run.
        """
        return self._graph(self.graphs.get(graph), None, config)

    def _graph(self, spec: GraphSpec, limits: Limits | None,
               config: RunnableConfig | None = None) -> Graph:
        limits = limits or self.limits
        configurable = run_configurable(config) if spec.per_config else {}
        key = (spec.name, limits.model_dump_json(), json.dumps(configurable, sort_keys=True, default=str))
        if key not in self._compiled:
            if len(self._compiled) >= MAX_COMPILED:  # many configurations: forget the oldest
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[key] = spec.build(GraphContext(
                model=self.model, redis_client=self.client, keys=self.keys,
                checkpointer=self.saver, limits=limits, policy=self.policy, store=self.store,
                configurable=configurable or None,
                extra_tools=self.extra_tools(),
            ))
        return self._compiled[key]

    def _lock(self, thread_id: str) -> AbstractContextManager[ThreadLock]:
        return thread_lock(self.client, self.keys, thread_id, ttl_s=self.settings.lock_ttl_s)

    def _config(self, thread_id: str, run_id: str | None = None,
                fence: int | None = None) -> RunnableConfig:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        if fence is not None:  # every checkpoint, record and trace write of the run carries it
            config["configurable"]["gw_fence"] = fence
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
            now = time.time()
            with self.client.pipeline(transaction=True) as pipe:  # one slot: the thread's
                mapping = {k: self.sealer.seal_text(v) if k in SEALED_META else v
                           for k, v in {**fields, "updated_at": str(now)}.items()}
                pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]  # redis-py's mapping type is invariant
                pipe.sadd(self.keys.registry(thread_id), key)
                pipe.execute()
            # The threads index the saver keeps, so threads with no checkpoint yet are listed.
            # It lives on another cluster slot, so it is written on its own (idempotent).
            self.client.zadd(self.keys.threads(), {escape(thread_id): int(now * 1000)})
            if isinstance(self.client, RedisCluster):  # a cluster pipeline cannot run scripts
                self.index.on_write(self.client, thread_id, fields, now)
            else:
                with self.client.pipeline(transaction=True) as pipe:  # the HTTP search index: its own slot
                    self.index.on_write(pipe, thread_id, fields, now)
                    pipe.execute()
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc

    def _status(self, meta: dict[str, str], snapshot: Any) -> Any:
        """Like ``status_of``, but a run whose process died after its last step reads as
        how that step ended, not as failed."""
        status = self.status_of(meta)
        if status != "failed" or meta.get("status") != "running" or snapshot.next:
            return status
        if snapshot.interrupts:
            return "interrupted"
        stop = (snapshot.values or {}).get("stop_reason")
        if stop is None:
            return status
        return "completed" if stop == "answered" else "stopped"

    def status_of(self, meta: dict[str, str]) -> Any:
        """The thread's status; a run whose process died reads as failed."""
        status = meta.get("status")
        if status == "running" and not held(self.client, self.keys, meta.get("thread_id", "")):
            return "failed"  # its process died mid-step; resume continues it
        return status

    def _run(
        self, spec: GraphSpec, compiled: Graph, thread_id: str, payload: Any,
        run_input: RunInput | dict[str, Any] | None, run_id: str | None = None,
        lock: ThreadLock | None = None, mode: StreamMode = "steps",
    ) -> Iterator[StepEvent]:
        run_id = run_id or str(uuid.uuid4())
        config = self._config(thread_id, run_id, lock.fence if lock else None)
        self._set_meta(thread_id, graph=spec.name, status="running", thread_id=thread_id)
        started = self.tracer.emit(thread_id, "run_start", run_id=run_id, graph=spec.name,
                                   input=run_input.model_dump() if isinstance(run_input, RunInput)
                                   else jsonable(run_input),
                                   resumed=run_input is None)
        if run_input is not None:  # usage counts from here, across later resumes
            self._set_meta(thread_id, trace_from=started)
        error = None
        try:
            # "sync": a step's checkpoint (with the calls it proposed) is saved before the
            # next step starts, so no tool runs for calls a crash could make the model re-plan.
            yield from step_events(compiled, payload, config, thread_id, run_id, mode,
                                   durability=self.settings.durability,
                                   check=lock.check if lock is not None else None)
        except LockLostError:
            raise  # the thread belongs to a newer run now: nothing of it is ours to write
        except GraphwrightError:
            self._set_meta(thread_id, status="failed")
            raise
        except Exception as exc:  # a model API or tool-stack failure: the run fails, resumable
            log.exception("run %s on thread %s failed", run_id, thread_id)
            error = f"{type(exc).__name__}: {exc}"
        result = self._result(spec, compiled, thread_id, run_id, error)
        if result.status in ("completed", "stopped"):
            self._remember(thread_id, run_id)
            result = self._result(spec, compiled, thread_id, run_id, error)  # with its usage
        self._set_meta(thread_id, status=result.status)
        self.refresh_ttl(thread_id)  # keys the run added expire with the rest
        yield StepEvent(thread_id=thread_id, kind="result", result=result)

    def _result(
        self, spec: GraphSpec, compiled: Graph, thread_id: str, run_id: str, error: str | None
    ) -> RunResult:
        config = self._config(thread_id)
        snapshot = compiled.get_state(config)
        values = snapshot.values if isinstance(snapshot.values, dict) else {}
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
            answer=answer_of(snapshot.values), stop_reason=values.get("stop_reason"),
            pending=pending if status == "interrupted" else None,
            steps=int((snapshot.metadata or {}).get("step", 0)),
            usage=Usage(
                tokens=sum(int(e.get("total_tokens") or 0) for e in since if e["kind"] == "model_call"),
                model_calls=sum(e["kind"] == "model_call" for e in since),
                tool_calls=sum(e["kind"] == "tool_call" for e in since),
            ),
            error=error,
        )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _unavailable(exc: Exception) -> InfrastructureError:
    return RedisUnavailableError(f"Redis is not reachable ({exc})")


__all__ = ["GateRequest", "Orchestrator", "parse_input"]
