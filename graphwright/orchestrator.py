"""`Orchestrator`: invoke named graphs, resume them from Redis, inspect and draw them.

The CLI and the HTTP service are thin layers over this class.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

import redis
import redis.asyncio as aredis
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from graphwright import run_core
from graphwright.aconnect import LoopPools, async_twin, loop_portable
from graphwright.async_api import AsyncTwins
from graphwright.checkpoints.keys import SERVICE_STORE, Keys
from graphwright.checkpoints.memory import MemoryBook, MemoryRecord, adopt_legacy
from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.checkpoints.sealed import sealer_from_env
from graphwright.checkpoints.store import AsyncRedisStore, RedisStore
from graphwright.checkpoints.trace import TraceWriter
from graphwright.compiled_graphs import CompiledGraphs
from graphwright.graphs.registry import (
    Graph,
    GraphRegistry,
    GraphSpec,
    RunInput,
    default_registry,
)
from graphwright.inputs import load_plugin, parse_input
from graphwright.inspection import Inspection
from graphwright.locking import ThreadLock, retire_fence, thread_lock
from graphwright.memories import Memories
from graphwright.models import make_model
from graphwright.nodes.deps import Limits
from graphwright.nodes.gate_models import GateRequest
from graphwright.project import Project, load_project
from graphwright.project_file import find_config
from graphwright.reader import open_client
from graphwright.results import (
    RunResult,
    StepEvent,
)
from graphwright.run_context import Lifecycle
from graphwright.run_record import RunRecord, run_config
from graphwright.run_writes import RunWrites
from graphwright.settings import Settings
from graphwright.streaming import StreamMode, alast_result
from graphwright.thread_index import ThreadIndex
from graphwright.thread_meta import ThreadMeta
from graphwright.tools.mcp_config import ServerConfig, load_mcp_servers, parse_mcp_servers
from graphwright.tools.policy import Policy
from graphwright.tools.runloop import call, hand, iterate, on_run_loop, run_loop
from graphwright.tools.spec import ToolSpec
from graphwright_errors import ConflictError, NotFoundError

log = logging.getLogger(__name__)


class Orchestrator(Inspection, AsyncTwins, CompiledGraphs):
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
        """`mcp_servers` (an `mcpServers` mapping) adds to GRAPHWRIGHT_MCP_SERVERS."""
        self.settings = settings or Settings()
        self.project = project
        self._owns_client = client is None  # a caller's client is the caller's to close
        self.client: redis.Redis = client if client is not None else self._connect()
        client = self.client
        self.sealer = sealer_from_env(encrypt=self.settings.encrypt)
        self.keys = Keys(prefix=self.settings.key_prefix, sealer=self.sealer)
        self.saver = RedisSaver(
            client,
            prefix=self.settings.key_prefix,
            ttl_s=(project.checkpoint_ttl_s() if project else None)
            or self.settings.checkpoint_ttl_s,
            encrypt=self.settings.encrypt,
        )
        # The run core's saver and store: asyncio clients on the process's run loop. The
        # blocking saver above serves direct calls (delete, copy, prune, listing).
        self.aclient = async_twin(client, retry_budget_s=self.settings.redis_retry_s)
        self.asaver = AsyncRedisSaver(
            self.aclient,
            prefix=self.settings.key_prefix,
            ttl_s=self.saver.ttl_s,
            encrypt=self.settings.encrypt,
        )
        self.asaver.loop = run_loop()  # so sync reads from other threads bridge onto it
        if loop_portable(self.aclient):  # runs may go on their callers' loops: not that one
            self.asaver.home = self.asaver.loop
        self.saver.stamp_thread = self.asaver.stamp_thread = True  # as the Agent Server's do
        self.model = model or make_model(self.settings)
        self.graphs = graphs or default_registry()
        self.limits = limits or self.settings.limits()
        self._limits_json = (self.limits, self.limits.model_dump_json())  # the default's key
        self.policy = policy
        self.tracer = TraceWriter(client, self.keys, ttl_s=self.settings.checkpoint_ttl_s)
        self.store = RedisStore(
            client,
            prefix=self.settings.key_prefix,
            sealer=self.sealer,
            index=project.store_index() if project else None,
            ttl=project.store_ttl() if project else None,
        )
        self.astore = AsyncRedisStore(
            self.aclient,  # type: ignore[arg-type]  # pipelines alike
            prefix=self.settings.key_prefix,
            sealer=self.sealer,
            index=self.store.index_config,
            ttl=self.store.ttl_config,
        )
        self.astore.loop = self.asaver.loop
        prefix, area = self.settings.key_prefix, SERVICE_STORE
        abook = AsyncRedisStore(
            self.aclient,  # type: ignore[arg-type]  # pipelines alike
            prefix=prefix,
            sealer=self.sealer,
            area=area,
        )
        abook.loop = self.asaver.loop
        self.memory = MemoryBook(
            RedisStore(client, prefix=prefix, sealer=self.sealer, area=area), abook
        )
        self.index = ThreadIndex(client, self.keys)
        self.thread_meta = ThreadMeta(client, self.keys, self.sealer, self.index)
        self.run_writes = RunWrites(self.aclient, self.keys, self.tracer, self.thread_meta)
        self.user_memory = Memories(self.memory, self.model, self.run_writes, self.settings.project)
        self.run_record = RunRecord(
            self.thread_meta, self.run_writes, self.user_memory, self.settings.durability
        )
        self.lifecycle = Lifecycle(self)  # every run's steps, for the API and the server
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
        return open_client(self.settings)

    def close(self) -> None:
        """Close the Redis connections this orchestrator opened.

        The asyncio ones of the run core (on the run loop, where they live) and the blocking client
        it connected.
        """
        call(self._aclose_twin(), "Orchestrator.close")
        if self._owns_client:
            _release(self.client)

    async def aclose(self) -> None:
        """`close` for a coroutine: this loop's connections first, then the run loop's."""
        pool = getattr(self.aclient, "connection_pool", None)
        if isinstance(pool, LoopPools) and not on_run_loop():
            await pool.disconnect()
        await hand(self._aclose_twin())
        if self._owns_client:
            _release(self.client)

    async def _aclose_twin(self) -> None:
        if isinstance(self.aclient, aredis.Redis):  # its pool is its own: closed with it
            await self.aclient.aclose(close_connection_pool=True)
        else:  # a cluster client closes its nodes' connections itself
            await self.aclient.aclose()

    def __enter__(self) -> Orchestrator:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @classmethod
    def from_env(cls, **overrides: Any) -> Orchestrator:
        """Settings from the environment and `.env`; embedded Redis and offline model by default.

        A `langgraph.json` named by `GRAPHWRIGHT_CONFIG`, or in the working directory,
        adds its graphs (see `from_config`).
        """
        path = find_config(os.environ.get("GRAPHWRIGHT_CONFIG") or None)
        if path is not None:
            return cls.from_config(path, **overrides)
        return cls(settings=Settings(), **overrides)

    @classmethod
    def from_config(cls, path: str | os.PathLike[str], **overrides: Any) -> Orchestrator:
        """Serve the LangGraph project described by the `langgraph.json` at `path`.

        Its env is applied before the settings are read, its dependencies go on
        `sys.path`, and its graphs are registered beside graphwright's own.
        """
        project = load_project(path)
        project.apply()
        overrides.setdefault("settings", Settings())
        return cls(project=project, **overrides)

    # --- running -------------------------------------------------------------

    def invoke(
        self,
        graph: str,
        input: str | dict[str, Any] | RunInput,
        *,
        thread_id: str | None = None,
        limits: Limits | None = None,
        run_id: str | None = None,
        user_id: str | None = None,
    ) -> RunResult:
        """Start a run on a new thread (or a finished one) and run it until it ends or waits.

        With `user_id`, the user's long-term memories are recalled for the run, and
        what the user explicitly asks to be remembered is stored when it ends.
        """
        # One hand-over to the run loop for the whole run: no thread wakes for each step.
        return call(
            alast_result(
                run_core.start(self, graph, input, thread_id, limits, run_id, user_id, "result")
            ),
            "Orchestrator.invoke",
        )

    def resume(
        self,
        thread_id: str,
        decision: Any = None,
        *,
        limits: Limits | None = None,
        run_id: str | None = None,
    ) -> RunResult:
        """Answer the pending gate, or continue a run whose process died, from its checkpoint."""
        return call(
            alast_result(
                run_core.resume(self, thread_id, decision, limits, run_id, None, "result")
            ),
            "Orchestrator.resume",
        )

    def stream(
        self,
        graph: str,
        input: str | dict[str, Any] | RunInput,
        *,
        thread_id: str | None = None,
        limits: Limits | None = None,
        run_id: str | None = None,
        user_id: str | None = None,
        mode: StreamMode = "steps",
    ) -> Iterator[StepEvent]:
        """Like `invoke`, yielding each step as it happens and the result last.

        With `mode="messages"` the model's tokens come too, as `kind="token"` events
        (`text`, `message_id`, `node`, `run_id`, `namespace`: see `StepEvent`),
        each before the step event of the node that called the model. The run itself goes
        on the process's run loop (`astream`); this thread only waits for its events.
        """
        return iterate(
            lambda: run_core.start(self, graph, input, thread_id, limits, run_id, user_id, mode),
            "Orchestrator.stream",
        )

    def stream_resume(
        self,
        thread_id: str,
        decision: Any = None,
        *,
        limits: Limits | None = None,
        run_id: str | None = None,
        decide: Callable[[GateRequest], Any] | None = None,
        mode: StreamMode = "steps",
    ) -> Iterator[StepEvent]:
        """Like `resume`, yielding each step (and, in `"messages"` mode, token) as it happens.

        `decide` builds the decision from the pending gate, read under the thread's lock
        (so a second reviewer racing the first is told the thread is running elsewhere).
        """
        return iterate(
            lambda: run_core.resume(self, thread_id, decision, limits, run_id, decide, mode),
            "Orchestrator.stream_resume",
        )

    def create_thread(
        self, thread_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> str:
        """Register an empty thread (the HTTP service's `threads.create`); runs pick its graph."""
        thread_id = thread_id or str(uuid.uuid4())
        if not self.thread_meta.create(
            thread_id,
            thread_id=thread_id,
            created_at=str(time.time()),
            metadata=json.dumps(metadata or {}),
        ):
            raise ConflictError(f"Thread with ID {thread_id} already exists")
        return thread_id

    def memories(self, user_id: str) -> list[MemoryRecord]:
        """The user's records and the project's, oldest update first."""
        return self.user_memory.recall(user_id)

    def forget(self, user_id: str, key: str) -> bool:
        """Remove the user's record under `key` from every later recall."""
        return self.user_memory.forget(user_id, key)

    def adopt_memories(self) -> int:
        """Move memories an older graphwright kept in the users' store into its own.

        Returns how many moved (docs/store.md: the migration).
        """
        return adopt_legacy(self.memory, self.store)

    def meta(self, thread_id: str) -> dict[str, str]:
        """The thread's stored metadata (graph, status, times); empty for an unknown thread."""
        return self._meta(thread_id)

    def update_meta(self, thread_id: str, /, **fields: str) -> None:
        """Set fields of the thread's meta hash (the HTTP service's metadata, TTL, graph)."""
        self.thread_meta.write(thread_id, None, **fields)

    def refresh_ttl(self, thread_id: str) -> int | None:
        """Restart the thread's own TTL (`threads.create(ttl=...)`) on every key it has now.

        Its length in seconds, or None for a thread without one.
        """
        return self.thread_meta.refresh_ttl(thread_id)

    def delete(self, thread_id: str) -> None:
        """Remove every key of the thread: checkpoints, trace, metadata, idempotency records."""
        if not self._meta(thread_id):  # a thread created but never run is deletable too
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        with self._lock(thread_id):
            self.saver.delete_thread(thread_id)
            self.client.delete(self.keys.meta(thread_id))
            retire_fence(self.client, self.keys, thread_id)
        self.index.forget([thread_id])

    # --- internals -----------------------------------------------------------

    def _lock(self, thread_id: str) -> AbstractContextManager[ThreadLock]:
        return thread_lock(self.client, self.keys, thread_id, ttl_s=self.settings.lock_ttl_s)

    def _config(
        self, thread_id: str, run_id: str | None = None, fence: int | None = None
    ) -> RunnableConfig:
        return run_config(thread_id, run_id, fence)

    def _thread(self, thread_id: str) -> tuple[GraphSpec, Graph, RunnableConfig]:
        spec = self.graphs.get(self.thread_meta.known(thread_id)["graph"])
        return spec, self._graph(spec, None), self._config(thread_id)

    def _meta(self, thread_id: str) -> dict[str, str]:
        return self.thread_meta.read(thread_id)

    def status_of(self, meta: dict[str, str]) -> Any:
        """The thread's status; a run whose process died reads as failed."""
        return self.thread_meta.status_of(meta)


__all__ = ["GateRequest", "Orchestrator", "parse_input"]


def _release(client: redis.Redis) -> None:
    """Close a client this orchestrator connected.

    A single node's pool is disconnected too (a pool it was given is not closed with it); a cluster
    client closes its nodes itself and has no one pool.
    """
    client.close()
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        pool.disconnect()
