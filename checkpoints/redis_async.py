"""`AsyncRedisSaver`: the checkpoint saver over an asyncio Redis client.

Its sync methods, which LangGraph calls when a sync node runs a subgraph inside an
async graph or from `asyncio.to_thread(graph.get_state, ...)`, run the async ones on
the saver's event loop (`asyncio.run_coroutine_threadsafe`) and wait; on that loop's
own thread they would deadlock it, so there they are refused.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import redis
import redis.asyncio as aredis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from graphwright.checkpoints import atomic, direct, ops, ops_admin, ops_delta, ops_list
from graphwright.checkpoints.drive import adrive, astream
from graphwright.checkpoints.keys import DEFAULT_PREFIX
from graphwright.checkpoints.last_saved import LastSaved
from graphwright.checkpoints.migrate import migrate_thread
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.checkpoints.saver_base import (
    AsyncClient,
    SaverBase,
    SyncCallOnLoopError,
    before_id,
    check_client,
    checked_prune,
    describe_client,
    is_batch,
    now_ms,
    redact_url,
    translate,
)
from graphwright_errors import ConfigurationError

T = TypeVar("T")
log = logging.getLogger(__name__)


class AsyncRedisSaver(SaverBase):
    """Checkpoint saver over an asyncio client, for `ainvoke`/`astream` graphs."""

    def __init__(
        self,
        client: AsyncClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int | None = None,
        serde: SerializerProtocol | None = None,
        encrypt: bool = False,
        wait: ReplicaWait | None = None,
    ) -> None:
        """`wait` (default: GRAPHWRIGHT_WAIT_REPLICAS) makes every put wait for replicas."""
        cluster = isinstance(client, AsyncRedisCluster)
        super().__init__(prefix=prefix, ttl_s=ttl_s, serde=serde, encrypt=encrypt, cluster=cluster)
        check_client(client)
        self.client = client
        self.where = describe_client(client)
        self.wait = wait or ReplicaWait.from_env()
        self._nodes: dict[tuple[str, int], aredis.Redis] = {}  # cluster masters, for WAIT
        self.watched: dict[str, LastSaved] = {}  # threads whose root writes are kept (`watch`)
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None  # set by the first async call
        # Where sync calls go when the client serves every loop (a pool per loop): a loop that
        # always runs, not the last one an async call came from (it may be closed by now).
        self.home: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_url(cls, url: str, *, cluster: bool = False, **kwargs: Any) -> AsyncRedisSaver:
        """Build from `redis://`, `rediss://` or `unix://`."""
        client: AsyncClient = (
            AsyncRedisCluster.from_url(url) if cluster else aredis.Redis.from_url(url)
        )
        saver = cls(client, **kwargs)
        saver.where = redact_url(url)
        return saver

    async def _send(self, batch: ops.Batch) -> builtins.list[Any]:
        cmds, transaction, fake = atomic.plan(batch)
        try:
            try:
                replies = await self._execute(cmds, transaction, atomic.wire)
            except redis.exceptions.NoScriptError:
                # A new or restarted server: load every script (on every node) once.
                for body in atomic.script_bodies():
                    await self.client.script_load(body)
                replies = await self._execute(cmds, transaction, atomic.wire)
        except redis.RedisError as exc:
            raise translate(self.where, exc) from exc
        return [None] * fake if fake else replies

    async def _execute(
        self,
        cmds: builtins.list[ops.Command],
        transaction: bool,
        wire: Callable[[ops.Command], ops.Command],
    ) -> builtins.list[Any]:
        if not transaction and isinstance(self.client, aredis.Redis):
            return await direct.aexecute(self.client, [wire(cmd) for cmd in cmds])
        if len(cmds) == 1 and not transaction:
            return [await self.client.execute_command(*wire(cmds[0]))]
        pipe = self.client.pipeline(transaction=transaction)
        for cmd in cmds:
            pipe.execute_command(*wire(cmd))
        return await pipe.execute()

    async def run(self, op: ops.Op[T]) -> T:
        """Drive an operation to completion, one round trip per batch."""
        self.loop = asyncio.get_running_loop()
        return await adrive(op, self._send)

    async def _read(self, make: Callable[[], ops.Op[T]]) -> T:
        try:
            return await self.run(make())
        except ops.LegacyThread as legacy:
            await self.run(migrate_thread(self.ctx, legacy.thread_id))
            return await self.run(make())

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._read(lambda: ops.get_tuple(self.ctx, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        nss = None
        if config is not None and config["configurable"].get("checkpoint_ns") is None:
            # Read (and migrate a layout-1 thread) first: the listing meets layout 2 only.
            thread_id = str(config["configurable"]["thread_id"])
            nss = await self._read(lambda: ops_list.namespaces(self.ctx, thread_id))
        self.loop = asyncio.get_running_loop()
        op = ops_list.listing(
            self.ctx, config, filter=filter, before_id=before_id(before), limit=limit, nss=nss
        )
        async for page in astream(op, is_batch, self._send):
            for tup in page:
                yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        watched = self._watched(config)
        try:
            saved = await self.run(
                ops.put(self.ctx, config, checkpoint, metadata, new_versions, now_ms())
            )
            await self._acknowledge(config, "checkpoint")
        except BaseException:
            if watched is not None:
                watched.broken = True
            raise
        if watched is not None:
            watched.put(config, checkpoint, metadata)
        return saved

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        watched = self._watched(config)
        try:
            await self.run(ops.put_writes(self.ctx, config, writes, task_id, task_path))
            await self._acknowledge(config, "pending writes")
        except BaseException:
            if watched is not None:
                watched.broken = True
            raise
        if watched is not None:
            watched.put_writes(config["configurable"]["checkpoint_id"], writes, task_id, task_path)

    @contextmanager
    def watch(self, thread_id: str) -> Iterator[LastSaved]:
        """Keep what this saver writes at the thread's root while the caller holds its lock.

        A thread watched already (not by a run holding its lock, then) leaves both broken.
        """
        kept = LastSaved(thread_id=thread_id)
        other = self.watched.setdefault(thread_id, kept)
        if other is not kept:
            other.broken = kept.broken = True
        try:
            yield kept
        finally:
            if self.watched.get(thread_id) is kept:
                del self.watched[thread_id]

    def _watched(self, config: RunnableConfig) -> LastSaved | None:
        if not self.watched:
            return None
        conf = config["configurable"]
        if conf.get("checkpoint_ns", ""):
            return None  # a subgraph's: not the thread's state
        return self.watched.get(str(conf["thread_id"]))

    async def _acknowledge(self, config: RunnableConfig, what: str) -> None:
        if self.wait is not None:
            thread_id = str(config["configurable"]["thread_id"])
            marker = self.keys.replica_ack(thread_id)
            node = self._node_of(marker)
            if node is None:
                log.warning(
                    "%s of thread %r: no cluster node is known for it yet; its replicas "
                    "were not waited for",
                    what,
                    thread_id,
                )
                return
            await self.wait.aacknowledge(node, marker, f"{what} of thread {thread_id!r}")

    def _node_of(self, key: str) -> aredis.Redis | None:
        """A client of the server holding `key`.

        On a cluster, one kept per master, so the marker and its WAIT share a connection to the node
        the thread's writes went to.
        """
        if isinstance(self.client, aredis.Redis):
            return self.client
        node = self.client.get_node_from_key(key)
        if node is None:  # no slot map yet
            return None
        where = (node.host, int(node.port))
        if where not in self._nodes:
            kwargs = self.client.get_connection_kwargs()
            self._nodes[where] = aredis.Redis(
                host=where[0],
                port=where[1],
                username=kwargs.get("username"),
                password=kwargs.get("password"),
            )
        return self._nodes[where]

    async def adelete_thread(self, thread_id: str) -> None:
        await self.run(ops_admin.delete_thread(self.ctx, str(thread_id)))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.run(ops_admin.delete_for_runs(self.ctx, [str(r) for r in run_ids]))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source, target = str(source_thread_id), str(target_thread_id)
        await self._read(lambda: ops_list.namespaces(self.ctx, source))
        await self.run(ops_admin.copy_thread(self.ctx, source, target, now_ms()))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self.run(checked_prune(self.ctx, thread_ids, strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self.run(ops_delta.delta_channel_history(self.ctx, config, channels))

    async def amigrate(self, thread_id: str) -> None:
        """Rewrite a thread stored by layout 1 (reads do this on their own)."""
        await self.run(migrate_thread(self.ctx, thread_id))

    async def athreads(self) -> builtins.list[tuple[str, float]]:
        """Every thread id with its last activity time in epoch milliseconds, newest first."""
        return await self.run(ops_list.all_threads(self.ctx))

    # --- sync methods: bridged onto the saver's loop from any other thread ---

    def _bridge(self, name: str, make: Callable[[], Awaitable[T]]) -> T:
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        loop = self.home or self.loop
        if loop is not None and current is loop:
            raise SyncCallOnLoopError(
                f"AsyncRedisSaver.{name} was called on the saver's own event loop, where "
                f"waiting would block it; use `await a{name}(...)`, or call {name} from "
                "another thread."
            )
        if loop is None or loop.is_closed() or not loop.is_running():
            raise ConfigurationError(
                f"AsyncRedisSaver.{name} needs the event loop the saver's client runs on, "
                "and there is none running; use RedisSaver for sync code."
            )

        async def call() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(call(), loop).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._bridge("get_tuple", lambda: self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> builtins.list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._bridge("list", collect)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._bridge("put", lambda: self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._bridge("put_writes", lambda: self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._bridge("delete_thread", lambda: self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._bridge("delete_for_runs", lambda: self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._bridge("copy_thread", lambda: self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._bridge("prune", lambda: self.aprune(thread_ids, strategy=strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._bridge(
            "get_delta_channel_history",
            lambda: self.aget_delta_channel_history(config=config, channels=channels),
        )
