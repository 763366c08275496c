"""`RedisStore` and `AsyncRedisStore`: LangGraph's `BaseStore` on plain Redis.

Layout under `{prefix}:store` (`{prefix}:service-store` for graphwright's own records,
see `keys.SERVICE_STORE`): one JSON string per item (value, times, TTL, vectors),
a sorted set of each namespace's keys in insertion order, and a sorted set of the
namespaces. Search walks the namespaces under a prefix, filters like LangGraph's
`InMemoryStore` and, with an index config, ranks by cosine similarity of embeddings;
without one, a query ranks by the share of its words found in the value. Both stores
run the same operations (`graphwright.checkpoints.store_ops`) through their own driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, TypeVar

import redis
import redis.asyncio as aredis
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, IndexConfig, Op, Result, TTLConfig
from langgraph.store.base.embed import ensure_embeddings

from graphwright.checkpoints import store_ops
from graphwright.checkpoints.drive import adrive, drive
from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.keys import DEFAULT_PREFIX, USER_STORE
from graphwright.checkpoints.sealed import Sealer
from graphwright.checkpoints.store_ops import Embed, Layout, Pipeline, StoreOp
from graphwright_errors import ConfigurationError

T = TypeVar("T")


class _StoreBase(BaseStore):
    supports_ttl = True

    def __init__(
        self,
        *,
        prefix: str,
        index: IndexConfig | None,
        ttl: TTLConfig | None,
        sealer: Sealer | None = None,
        area: str = USER_STORE,
    ) -> None:
        self.ttl_config = ttl
        self.index_config = index
        self.embeddings: Embeddings | None = ensure_embeddings(index["embed"]) if index else None
        fields = tuple(index.get("fields") or ["$"]) if index else ()
        self.layout = Layout(
            prefix=f"{prefix}:{area}",
            ttl_config=ttl,
            index_fields=fields,
            sealer=sealer or Sealer(),
        )

    def _embeddings(self) -> Embeddings:
        if self.embeddings is None:  # store_ops asks only when index fields are configured
            raise ConfigurationError("this store has no embedding function configured")
        return self.embeddings


class RedisStore(_StoreBase):
    """Long-term memory on a blocking Redis client; `abatch` runs `batch` in a thread."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        sealer: Sealer | None = None,
        area: str = USER_STORE,
    ) -> None:
        super().__init__(prefix=prefix, index=index, ttl=ttl, sealer=sealer, area=area)
        self.redis = client

    def run(self, op: StoreOp[T]) -> T:
        """Drive an operation: one round trip per pipeline."""
        try:
            return drive(op, self._answer)
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"the memory store cannot reach Redis: {exc}") from exc

    def _answer(self, request: Pipeline | Embed) -> Any:
        if isinstance(request, Embed):
            emb = self._embeddings()
            return (
                [emb.embed_query(request.texts[0])]
                if request.query
                else emb.embed_documents(request.texts)
            )
        with self.redis.pipeline(transaction=False) as pipe:
            for command in request.commands:
                pipe.execute_command(*command)  # type: ignore[no-untyped-call]  # untyped in redis-py
            return pipe.execute()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.run(store_ops.batch(self.layout, list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))


class AsyncRedisStore(_StoreBase):
    """Long-term memory on an asyncio Redis client; the sync methods refuse to block a loop."""

    def __init__(
        self,
        client: aredis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        sealer: Sealer | None = None,
        area: str = USER_STORE,
    ) -> None:
        super().__init__(prefix=prefix, index=index, ttl=ttl, sealer=sealer, area=area)
        self.redis = client
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop its client runs on

    async def run(self, op: StoreOp[T]) -> T:
        try:
            return await adrive(op, self._answer)
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"the memory store cannot reach Redis: {exc}") from exc

    async def _answer(self, request: Pipeline | Embed) -> Any:
        if isinstance(request, Embed):
            emb = self._embeddings()
            return (
                [await emb.aembed_query(request.texts[0])]
                if request.query
                else await emb.aembed_documents(request.texts)
            )
        async with self.redis.pipeline(transaction=False) as pipe:
            for command in request.commands:
                pipe.execute_command(*command)
            return await pipe.execute()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """From a thread other than the store's loop (a sync node of an async run): bridged."""
        loop = self.loop
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if loop is None or current is loop or not loop.is_running():
            raise ConfigurationError(
                "AsyncRedisStore is asyncio-only here: use the a-methods "
                "(aget, aput, asearch, ...) or RedisStore for blocking code"
            )
        return asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.run(store_ops.batch(self.layout, list(ops)))
