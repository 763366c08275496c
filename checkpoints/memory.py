"""Long-term memory records over any LangGraph store: scoped, sourced, replaceable, forgettable.

A record lives at namespace `("memories", scope)` under its key, so reading one
scope can never return another's records. A new value for the same scope and key
replaces the old one, which moves into a short history. The book's store is graphwright's
own (`keys.SERVICE_STORE`), never the users' store, whose namespaces are all theirs.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from langgraph.store.base import BaseStore, SearchItem
from pydantic import BaseModel, Field, ValidationError

from graphwright_errors import UserError

Kind = Literal["preference", "fact", "procedure"]
ROOT = "memories"
HISTORY = 5
SCOPE = re.compile(r"^(user|project):[^\s.]{1,128}$")


class Source(BaseModel):
    """Where a record came from: the thread and the user's message."""

    thread_id: str
    message_id: str | None = None


class PastValue(BaseModel):
    """A value a record held before, kept so a replaced memory can be told and undone."""

    value: str
    source: Source
    updated_at: float


class MemoryRecord(BaseModel):
    """One remembered fact, validated at the boundary: it is written by models and users."""

    scope: str = Field(description="user:<id> or project:<id>")
    kind: Kind
    key: str = Field(min_length=1, max_length=128)
    value: str = Field(min_length=1, max_length=2000)
    source: Source
    updated_at: float
    history: list[PastValue] = Field(
        default_factory=list, description="replaced values, newest first"
    )


def scope_of(kind: Literal["user", "project"], ident: str) -> str:
    """`user:<id>` or `project:<id>`, refusing ids that could reach another scope."""
    scope = f"{kind}:{ident}"
    if not SCOPE.match(scope):
        raise UserError(
            f"{kind} id {ident!r} is not valid: 1 to 128 characters, no spaces or periods"
        )
    return scope


class MemoryBook:
    """Records on a store; every read names its scope.

    `astore` serves the a-methods (a run's recall and remember, on its event loop): the same
    records through an asyncio client. Without one they go through `store`'s own a-methods.
    """

    def __init__(self, store: BaseStore, astore: BaseStore | None = None) -> None:
        self.store = store
        self.astore = astore or store

    def remember(
        self, scope: str, kind: Kind, key: str, value: str, source: Source
    ) -> MemoryRecord:
        namespace = (ROOT, scope)
        old = self.store.get(namespace, key)
        record, changed = replaced(old.value if old else None, scope, kind, key, value, source)
        if changed:
            self.store.put(namespace, key, record.model_dump(mode="json"), index=False)
        return record

    async def aremember(
        self, scope: str, kind: Kind, key: str, value: str, source: Source
    ) -> MemoryRecord:
        namespace = (ROOT, scope)
        old = await self.astore.aget(namespace, key)
        record, changed = replaced(old.value if old else None, scope, kind, key, value, source)
        if changed:
            await self.astore.aput(namespace, key, record.model_dump(mode="json"), index=False)
        return record

    def recall(self, scopes: list[str]) -> list[MemoryRecord]:
        """The records of exactly these scopes, oldest update first."""
        return in_scopes({scope: self.store.search((ROOT, scope), limit=1000) for scope in scopes})

    async def arecall(self, scopes: list[str]) -> list[MemoryRecord]:
        """`recall` on the caller's event loop."""
        return in_scopes(
            {scope: await self.astore.asearch((ROOT, scope), limit=1000) for scope in scopes}
        )

    def forget(self, scope: str, key: str) -> bool:
        if self.store.get((ROOT, scope), key) is None:
            return False
        self.store.delete((ROOT, scope), key)
        return True


def replaced(
    old: dict[str, Any] | None, scope: str, kind: Kind, key: str, value: str, source: Source
) -> tuple[MemoryRecord, bool]:
    """The record a new value makes of the stored one (`old`), and whether it changed.

    The value it replaces moves into the record's short history.
    """
    history: list[PastValue] = []
    if old is not None:
        prior = MemoryRecord.model_validate(old)
        if prior.value == value:
            return prior, False
        history = [
            PastValue(value=prior.value, source=prior.source, updated_at=prior.updated_at),
            *prior.history,
        ][:HISTORY]
    record = MemoryRecord(
        scope=scope,
        kind=kind,
        key=key,
        value=value,
        source=source,
        updated_at=time.time(),
        history=history,
    )
    return record, True


def in_scopes(found: dict[str, list[SearchItem]]) -> list[MemoryRecord]:
    """The records of each scope's search, oldest update first.

    A prefix search may reach a longer namespace: its items are not the scope's.
    """
    records = [
        MemoryRecord.model_validate(item.value)
        for scope, items in found.items()
        for item in items
        if item.namespace == (ROOT, scope)
    ]
    return sorted(records, key=lambda r: r.updated_at)


def effective(records: list[MemoryRecord]) -> list[MemoryRecord]:
    """One record per key: the most recently updated, whichever scope it is in."""
    latest: dict[str, MemoryRecord] = {}
    for record in sorted(records, key=lambda r: r.updated_at):
        latest[record.key] = record
    return list(latest.values())


def adopt_legacy(book: MemoryBook, users: BaseStore, *, page: int = 100) -> int:
    """Move the records an older graphwright kept in the users' store into `book`.

    They sat under `("memories", scope)`; returns how many moved. Only graphwright's own records
    move: a valid scope label and a value that is a record of that scope. Anything else under
    `memories` is a user's and stays. Where the book has the key already, the newer wins.
    """
    moved, offset = 0, 0
    while found := users.list_namespaces(prefix=(ROOT,), max_depth=2, limit=page, offset=offset):
        offset += len(found)
        for namespace in found:
            if len(namespace) == 2 and SCOPE.match(namespace[1]):
                moved += _adopt_scope(book, users, namespace)
    return moved


def _adopt_scope(book: MemoryBook, users: BaseStore, namespace: tuple[str, ...]) -> int:
    moved = 0
    for item in users.search(namespace, limit=10_000):
        if item.namespace != namespace:
            continue  # a longer namespace under this one: the user's
        try:
            record = MemoryRecord.model_validate(item.value)
        except ValidationError:
            continue
        if record.scope != namespace[1]:
            continue
        current = book.store.get(namespace, item.key)
        kept = MemoryRecord.model_validate(current.value) if current is not None else None
        if kept is None or kept.updated_at < record.updated_at:
            book.store.put(namespace, item.key, record.model_dump(mode="json"), index=False)
        users.delete(namespace, item.key)
        moved += 1
    return moved
