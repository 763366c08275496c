"""Reading a thread without its graph, so the CLI's `show` and `trace` load no LangGraph.

The client the Orchestrator opens too, the thread's meta, trace and recorded summary.

A thread with no summary recorded for its head (`graphwright.summary`) is left to
`Orchestrator.summary`, which compiles the graph.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import redis

from graphwright import summary
from graphwright.checkpoints.errors import EvictingServerError
from graphwright.checkpoints.head import read_head
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.sealed import sealer_from_env
from graphwright.checkpoints.server_check import check_server
from graphwright.checkpoints.trace import TraceWriter
from graphwright.connect import connect
from graphwright.project_file import find_config
from graphwright.results import ThreadSummary
from graphwright.saver import redis_url
from graphwright.settings import Settings
from graphwright.thread_index import ThreadIndex
from graphwright.thread_meta import ThreadMeta

log = logging.getLogger(__name__)


def open_client(settings: Settings) -> redis.Redis:
    """The blocking client of the settings' Redis (the embedded one by default), checked."""
    client: redis.Redis = connect(
        redis_url(settings), cluster=settings.redis_cluster, retry_budget_s=settings.redis_retry_s
    )
    try:
        check_server(client, refuse_eviction=settings.refuse_eviction)
    except EvictingServerError as exc:
        raise EvictingServerError(
            f"{exc} (refused because GRAPHWRIGHT_REFUSE_EVICTION is set)"
        ) from exc
    except redis.ConnectionError:
        log.debug("Redis not reachable at start; the first operation reports it")
    return client


class ThreadReader:
    """The read-only views of a thread that need no graph."""

    def __init__(self, settings: Settings) -> None:
        self.client = open_client(settings)
        sealer = sealer_from_env(encrypt=settings.encrypt)
        self.keys = Keys(prefix=settings.key_prefix, sealer=sealer)
        self.thread_meta = ThreadMeta(
            self.client, self.keys, sealer, ThreadIndex(self.client, self.keys)
        )
        self.tracer = TraceWriter(self.client, self.keys, ttl_s=settings.checkpoint_ttl_s)

    @classmethod
    def from_env(cls) -> ThreadReader | None:
        """Like `Orchestrator.from_env`.

        None with a `langgraph.json`, whose env (applied by the Orchestrator) may name another
        Redis.
        """
        if find_config(os.environ.get("GRAPHWRIGHT_CONFIG") or None) is not None:
            return None
        return cls(Settings())

    def summary(self, thread_id: str) -> ThreadSummary | None:
        """The summary its last run recorded, if the thread is still where that run left it."""
        meta = self.thread_meta.known(thread_id)
        found = summary.decode(
            meta.get(summary.FIELD), read_head(self.client, self.keys, thread_id)
        )
        if found is None:
            return None
        status = self.thread_meta.settled(
            meta, next=found.next, interrupted=found.interrupted, stop_reason=found.stop_reason
        )
        return ThreadSummary(
            thread_id=thread_id,
            graph=meta["graph"],
            status=status,
            next=found.next,
            stop_reason=found.stop_reason,
            answer=found.answer,
            pending=found.pending,
            checkpoint_id=found.checkpoint_id,
        )

    def trace(self, thread_id: str) -> list[dict[str, Any]]:
        """`Orchestrator.trace`: the thread's recorded events."""
        self.thread_meta.known(thread_id)
        return self.tracer.read(thread_id)
