"""Threads over HTTP: the Agent Server's thread documents, search, copy, prune and TTL.

Search reads one page of the thread index (status and scalar metadata answered by
Redis sets); only filters the index cannot answer (`values`, nested metadata,
`ids`) and sorts by id or status read the candidates one by one.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.serialize import wire
from graphwright.server.records import thread_state
from graphwright.server.records.run_store import RunStore, iso
from graphwright.server.schemas.thread_bodies import (
    ThreadCountBody,
    ThreadCreateBody,
    ThreadPatchBody,
    ThreadSearchBody,
    ThreadTTL,
)
from graphwright.thread_index import API_STATUS, ApiStatus, Order, Query, contains
from graphwright_errors import ConflictError, NotFoundError

FIELDS = (
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "status",
    "config",
    "values",
    "interrupts",
    "error",
)
COPY_FIELDS = tuple(
    f for f in FIELDS if f not in ("values", "interrupts", "error")
)  # as the reference
_PATH = re.compile(r"[^.\[\]]+|\[-?\d+\]")


def extract_path(doc: Any, path: str) -> Any:
    """`values.messages[-1].content` from a document; `None` where a step is missing."""
    for step in _PATH.findall(path):
        if step.startswith("["):
            index = int(step[1:-1])
            doc = doc[index] if isinstance(doc, list) and -len(doc) <= index < len(doc) else None
        else:
            doc = doc.get(step) if isinstance(doc, Mapping) else None
        if doc is None:
            return None
    return doc


class Threads:
    """The thread resource of one service."""

    def __init__(self, orch: Orchestrator) -> None:
        self.orch = orch
        self.index = orch.index

    # --- documents -------------------------------------------------------------

    def status(self, meta: Mapping[str, str]) -> ApiStatus:
        return API_STATUS.get(self.orch.status_of(dict(meta)) or "", "idle")

    def doc(self, thread_id: str, *, fields: Iterable[str] = FIELDS) -> dict[str, Any]:
        meta = self.orch.meta(thread_id)
        if not meta:
            raise NotFoundError(f"Thread with ID {thread_id} not found")
        return self._doc(thread_id, meta, set(fields))

    def _doc(self, thread_id: str, meta: Mapping[str, str], fields: set[str]) -> dict[str, Any]:
        created = float(meta.get("created_at") or meta.get("updated_at") or 0)
        updated = iso(float(meta.get("updated_at") or created))
        out: dict[str, Any] = {
            "thread_id": thread_id,
            "created_at": iso(created),
            "updated_at": updated,
            "state_updated_at": updated,
            "metadata": json.loads(meta.get("metadata") or "{}"),
            "status": self.status(meta),
            "config": self.config(thread_id),
            "values": None,
        }
        if meta.get("graph"):  # it has state: the reference then also tells interrupts and error
            out["interrupts"], out["error"] = {}, None
            if fields & {"values", "interrupts"}:
                snap = self.orch.snapshot(thread_id)
                out["values"] = wire(snap.values)
                out["interrupts"] = {
                    t.id: [thread_state.interrupt_doc(i) for i in t.interrupts]
                    for t in snap.tasks
                    if t.interrupts
                }
        return {k: v for k, v in out.items() if k in fields}

    def config(self, thread_id: str) -> dict[str, Any]:
        """The thread's config as the reference gives it.

        `{}` until a run is made on the thread, then with a `configurable`.
        """
        ran = self.orch.client.exists(self.orch.keys.thread_runs(thread_id))
        return {"configurable": {}} if ran else {}

    # --- writing ---------------------------------------------------------------

    def create(self, body: ThreadCreateBody) -> dict[str, Any]:
        try:  # one step: of two creating one id at once, the other finds it taken
            thread_id = self.orch.create_thread(body.thread_id or str(uuid.uuid4()), body.metadata)
        except ConflictError:
            if (body.if_exists or "raise") == "raise" or not body.thread_id:
                raise
            return self.doc(body.thread_id)
        if body.ttl is not None:
            self.set_ttl(thread_id, body.ttl)
        if body.supersteps:
            steps = [[u.model_dump() for u in s.updates] for s in body.supersteps]
            thread_state.bulk_update(self.orch, thread_id, steps)
        return self.doc(thread_id)

    def set_ttl(self, thread_id: str, ttl: ThreadTTL) -> None:
        self.orch.update_meta(thread_id, ttl_s=str(int(ttl.ttl * 60)))
        self.orch.refresh_ttl(thread_id)

    def patch(self, thread_id: str, body: ThreadPatchBody) -> dict[str, Any]:
        meta = self.orch.meta(thread_id)
        if not meta:
            raise NotFoundError(f"Thread with ID {thread_id} not found")
        merged = {**json.loads(meta.get("metadata") or "{}"), **(body.metadata or {})}
        self.orch.update_meta(thread_id, metadata=json.dumps(merged))
        if body.ttl is not None:
            self.set_ttl(thread_id, body.ttl)
        return self.doc(thread_id)

    def stamp(
        self, thread_id: str, graph_id: str, assistant_id: str, meta: dict[str, str] | None = None
    ) -> None:
        """Note which graph and assistant run on the thread (a chat UI lists threads by them).

        `meta` is the thread's as just read, if the caller has it.
        """
        meta = self.orch.meta(thread_id) if meta is None else meta
        current = json.loads(meta.get("metadata") or "{}")
        if current.get("graph_id") == graph_id and current.get("assistant_id") == assistant_id:
            return
        stamped = {**current, "graph_id": graph_id, "assistant_id": assistant_id}
        self.orch.update_meta(thread_id, metadata=json.dumps(stamped))

    def delete(self, thread_id: str) -> None:
        if not self.orch.meta(thread_id):
            raise NotFoundError(f"Thread with ID {thread_id} not found")
        self.delete_known(thread_id)

    def delete_known(self, thread_id: str) -> None:
        """Delete the thread.

        Its runs leave the delayed queue with it (read before, taken off after: a delete refused
        keeps them).
        """
        runs = RunStore.of(self.orch)
        ids = runs.run_ids(thread_id)
        self.orch.delete(thread_id)
        runs.unschedule(thread_id, ids)

    def copy(self, thread_id: str) -> dict[str, Any]:
        meta = self.orch.meta(thread_id)
        if not meta:
            raise NotFoundError(f"Thread with ID {thread_id} not found")
        new_id = str(uuid.uuid4())
        self.orch.saver.copy_thread(thread_id, new_id)
        kept = {
            k: v for k, v in meta.items() if k in ("graph", "metadata", "ttl_s")
        }  # idle, as the reference
        self.orch.update_meta(new_id, **kept, thread_id=new_id, created_at=str(time.time()))
        self.orch.refresh_ttl(new_id)
        return {
            **self.doc(new_id, fields=COPY_FIELDS),
            "config": {},
        }  # the reference's copy: no configurable

    def prune(self, thread_ids: list[str], strategy: str) -> int:
        known = [t for t in thread_ids if self.orch.meta(t)]
        if strategy == "delete":
            for thread_id in known:
                self.delete_known(thread_id)
        else:
            self.orch.saver.prune(known, strategy="keep_latest")
        return len(known)

    # --- searching -------------------------------------------------------------

    def _matches(
        self,
        doc: Mapping[str, Any],
        query: Query,
        values: Mapping[str, Any] | None,
        status: str | None,
    ) -> bool:
        return (
            (not query.metadata or contains(doc["metadata"], query.metadata))
            and query.allows(doc["metadata"])
            and (not values or (doc["values"] is not None and contains(doc["values"], values)))
            and (not status or doc["status"] == status)
        )

    def _load(
        self, ids: Iterable[str], status: str | None, fields: set[str]
    ) -> list[dict[str, Any]]:
        """Thread documents for index hits; drops threads that are gone and fixes stale statuses."""
        docs, gone = [], []
        for thread_id in ids:
            meta = self.orch.meta(thread_id)
            if not meta:
                gone.append(thread_id)
                continue
            doc = self._doc(thread_id, meta, fields | {"status", "metadata"})
            if status and doc["status"] != status:  # a run's process died: its thread is an error
                with self.orch.client.pipeline(transaction=True) as pipe:
                    self.index.set_status(pipe, thread_id, doc["status"])
                    pipe.execute()
            docs.append(doc)
        self.index.forget(gone)
        return docs

    def search(
        self, body: ThreadSearchBody, filters: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """One page of the threads matching `body` that `filters` lets the caller see.

        `filters` is the caller's grant: it narrows the candidates before the page is cut.
        """
        self.index.drop_expired()
        fields = set(body.select or FIELDS) | ({"values"} if body.values or body.extract else set())
        order: Order = "created" if body.sort_by == "created_at" else "updated"
        descending = (body.sort_order or "desc").lower() == "desc"
        query = Query(
            status=body.status,
            metadata=body.metadata,
            order=order,
            descending=descending,
            filters=filters,
        )
        checks = bool(
            body.values
            or body.ids
            or query.needs_check()
            or body.sort_by in ("thread_id", "status")
        )
        if not checks:
            ids = self.index.page(query, body.offset, body.limit)
            docs = [
                d
                for d in self._load(ids, body.status, fields)
                if self._matches(d, Query(), None, body.status)
            ]
        else:
            ids = self._narrowed(body.ids if body.ids else self.index.page(query, 0, -1), query)
            # in the index's order with only metadata checked: cut the page before loading
            early = not (
                body.values or body.ids or body.status or body.sort_by in ("thread_id", "status")
            )
            if early:
                ids = ids[body.offset : body.offset + body.limit]
            docs = [
                d
                for d in self._load(
                    ids, body.status, fields | {"values"} if body.values else fields
                )
                if self._matches(d, query, body.values, body.status)
            ]
            if body.sort_by in ("thread_id", "status"):
                docs.sort(key=lambda d: str(d[body.sort_by or "thread_id"]), reverse=descending)
            elif body.ids:
                key = "created_at" if order == "created" else "updated_at"
                docs.sort(key=lambda d: str(d[key]), reverse=descending)
            if not early:
                docs = docs[body.offset : body.offset + body.limit]
        return [self._shape(d, body) for d in docs]

    def _narrowed(self, ids: list[str], query: Query) -> list[str]:
        """The candidates whose metadata matches the query and the caller's filter.

        Judged on the metadata alone: one read for all of them, no thread loaded.
        """
        metas = self.orch.thread_meta.metadata_of(ids)
        return [
            t
            for t, m in zip(ids, metas, strict=True)
            if m is not None
            and (not query.metadata or contains(m, query.metadata))
            and query.allows(m)
        ]

    @staticmethod
    def _shape(doc: dict[str, Any], body: ThreadSearchBody) -> dict[str, Any]:
        out = {k: v for k, v in doc.items() if k in (body.select or FIELDS)}
        if body.extract:
            out["extracted"] = {
                alias: extract_path(doc, path) for alias, path in body.extract.items()
            }
        return out

    def count(self, body: ThreadCountBody, filters: Mapping[str, Any] | None = None) -> int:
        self.index.drop_expired()
        query = Query(status=body.status, metadata=body.metadata, filters=filters)
        if not (body.values or query.needs_check()):
            return self.index.count(query)
        ids = self._narrowed(self.index.page(query, 0, -1), query)
        if not (body.values or body.status):
            return len(ids)
        fields = {"status", "metadata"} | ({"values"} if body.values else set())
        docs = self._load(ids, body.status, fields)
        return sum(self._matches(d, query, body.values, body.status) for d in docs)
