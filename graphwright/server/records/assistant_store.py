"""Assistants in Redis: a graph plus its config, context and metadata, with every version kept.

The current document of each assistant is one field of a hash; its versions are a hash
of their own (version number -> document). Each registered graph keeps a system
assistant whose id the reference server derives from the graph name (a UUID5), so
clients may name either.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import redis

from graphwright.checkpoints.keys import Keys
from graphwright.orchestrator import Orchestrator
from graphwright.thread_index import contains
from graphwright_errors import ConflictError, GraphwrightError, NotFoundError, UserError

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")  # the reference's namespace
SORTABLE = ("assistant_id", "graph_id", "name", "created_at", "updated_at")
Doc = dict[str, Any]
Allows = Callable[[Mapping[str, Any]], bool]  # the caller's grant: may they see this metadata
log = logging.getLogger(__name__)


def system_id(graph_id: str) -> str:
    """The id of a graph's own assistant, the same one the reference server gives it."""
    return str(uuid.uuid5(NAMESPACE_GRAPH, graph_id))


def now_iso() -> str:
    """A stored timestamp: ISO 8601 in UTC, as the Agent Server writes them."""
    return datetime.now(UTC).isoformat()


def _settle(
    config: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Config and context kept in step, as the reference does (context mirrors configurable)."""
    config = dict(config or {})
    if config.get("configurable") and context:
        raise UserError("give either config.configurable or context, not both; prefer context")
    if config.get("configurable"):
        return config, dict(config["configurable"])
    if context:
        config["configurable"] = dict(context)
        return config, dict(context)
    return config, None if context is None else {}


class AssistantStore:
    """Create, version, search and delete assistants; `graphs` names the known graph ids."""

    def __init__(
        self, client: redis.Redis, keys: Keys, graphs: Callable[[], Iterable[str]]
    ) -> None:
        self.redis = client
        self.keys = keys
        self.sealer = keys.sealer  # documents hold the assistant's config and context
        self.graphs = graphs

    @classmethod
    def of(cls, orch: Orchestrator) -> AssistantStore:
        """The assistants of an Orchestrator's graphs."""
        return cls(orch.client, orch.keys, orch.graphs.names)

    def ensure_graphs(self, orch: Orchestrator) -> None:
        self.ensure_system(
            {spec.name: spec.description for spec in orch.graphs},
            {spec.name: graph_name(orch, spec) for spec in orch.graphs},
        )

    # --- reading -----------------------------------------------------------------

    def _load(self, assistant_id: str) -> Doc | None:
        raw: bytes | None = self.redis.hget(self.keys.assistants(), assistant_id)  # type: ignore[assignment]  # bytes client
        return (
            None
            if raw is None
            else dict(self.sealer.open_json(raw, self.keys.assistants(), assistant_id))
        )

    def resolve_id(self, assistant_id: str) -> str:
        """A graph name stands for its system assistant."""
        return system_id(assistant_id) if assistant_id in set(self.graphs()) else assistant_id

    def find(self, assistant_id: str) -> Doc | None:
        """The assistant, or None when no assistant has that id."""
        return self._load(self.resolve_id(assistant_id))

    def get(self, assistant_id: str) -> Doc:
        doc = self._load(self.resolve_id(assistant_id))
        if doc is None and assistant_id in set(self.graphs()):
            # A graph registered after the server started: its system assistant, made now.
            self.ensure_system({assistant_id: ""})
            doc = self._load(self.resolve_id(assistant_id))
        if doc is None:
            raise NotFoundError(f"Assistant {assistant_id} not found")
        return doc

    def all(self) -> list[Doc]:
        raw: dict[bytes, bytes] = self.redis.hgetall(self.keys.assistants())  # type: ignore[assignment]  # bytes client
        return [self.sealer.open_json(v, self.keys.assistants(), k) for k, v in raw.items()]

    def _matching(
        self,
        graph_id: str | None,
        name: str | None,
        metadata: Mapping[str, Any] | None,
        allows: Allows | None,
    ) -> list[Doc]:
        if graph_id is not None:
            self._check_graph(graph_id)
        return [
            a
            for a in self.all()
            if (not graph_id or a["graph_id"] == graph_id)
            and (not name or name.lower() in str(a.get("name") or "").lower())
            and (not metadata or contains(a.get("metadata") or {}, metadata))
            and (allows is None or allows(a.get("metadata") or {}))
        ]

    def search(
        self,
        *,
        graph_id: str | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str | None = None,
        select: list[str] | None = None,
        allows: Allows | None = None,
    ) -> list[Doc]:
        """One page of the assistants matching the query that `allows` lets the caller see.

        `allows` is the caller's grant; it narrows the list before the page is cut.
        """
        found = self._matching(graph_id, name, metadata, allows)
        field = (sort_by or "").lower()
        descending = not (sort_order and sort_order.upper() == "ASC")
        if field in SORTABLE:
            lowered = field in ("name", "graph_id")
            found.sort(
                key=lambda a: str(a.get(field) or "").lower() if lowered else str(a.get(field)),
                reverse=descending,
            )
        else:
            found.sort(key=lambda a: str(a["created_at"]), reverse=True)
        page = found[offset : offset + limit]
        return [{k: v for k, v in a.items() if k in select} for a in page] if select else page

    def count(
        self,
        *,
        graph_id: str | None = None,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        allows: Allows | None = None,
    ) -> int:
        return len(self._matching(graph_id, name, metadata, allows))

    def versions(
        self,
        assistant_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        allows: Allows | None = None,
    ) -> list[Doc]:
        assistant_id = self.get(assistant_id)["assistant_id"]
        key = self.keys.assistant_versions(assistant_id)
        raw: dict[bytes, bytes] = self.redis.hgetall(key)  # type: ignore[assignment]  # bytes client
        docs = [self.sealer.open_json(v, key, n) for n, v in raw.items()]
        docs = [
            d
            for d in docs
            if (not metadata or contains(d.get("metadata") or {}, metadata))
            and (allows is None or allows(d.get("metadata") or {}))
        ]
        docs.sort(key=lambda d: int(d["version"]), reverse=True)
        return docs[offset : offset + limit]

    # --- writing -----------------------------------------------------------------

    def _check_graph(self, graph_id: str) -> None:
        known = sorted(self.graphs())
        if graph_id not in known:
            raise NotFoundError(f"Graph '{graph_id}' not found. Expected one of: {known}")

    def create(
        self,
        *,
        graph_id: str,
        assistant_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_exists: str | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> Doc:
        self._check_graph(graph_id)
        config_, context_ = _settle(config, context)
        assistant_id = assistant_id or str(uuid.uuid4())
        existing = self._load(assistant_id)
        if existing is not None:
            if (if_exists or "raise") == "raise":
                raise ConflictError(f"Assistant {assistant_id} already exists")
            return existing
        now = now_iso()
        doc: Doc = {
            "assistant_id": assistant_id,
            "graph_id": graph_id,
            "config": config_,
            "context": context_ or {},
            "metadata": dict(metadata or {}),
            "name": name or "Untitled",
            "description": description,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        version = {k: v for k, v in doc.items() if k != "updated_at"}
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(
                self.keys.assistants(),
                assistant_id,
                self.sealer.seal_json(doc, self.keys.assistants(), assistant_id),
            )
            pipe.hsetnx(
                self.keys.assistant_versions(assistant_id),
                "1",
                self.sealer.seal_json(version, self.keys.assistant_versions(assistant_id), "1"),
            )
            created, _ = pipe.execute()
        return doc if created else self.get(assistant_id)

    def ensure_system(
        self, descriptions: Mapping[str, str], names: Mapping[str, str] | None = None
    ) -> None:
        """Give each registered graph its assistant, kept across restarts.

        Name and description follow the registry.
        """
        for graph_id, description in descriptions.items():
            aid = system_id(graph_id)
            name = (names or {}).get(graph_id, graph_id)
            doc = self.create(
                graph_id=graph_id,
                assistant_id=aid,
                if_exists="do_nothing",
                metadata={"created_by": "system"},
                name=name,
                description=description or None,
            )
            if doc.get("description") != (description or None) or doc.get("name") != name:
                self.update(aid, name=name, description=description or None)

    def update(
        self,
        assistant_id: str,
        *,
        graph_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> Doc:
        """A new version from the current one; metadata is merged, the rest replaced if given."""
        if graph_id is not None:
            self._check_graph(graph_id)
        config_, context_ = _settle(config, context)

        def change(doc: Doc) -> Doc:
            return {
                **doc,
                "graph_id": graph_id or doc["graph_id"],
                "config": config_ or doc["config"],
                "context": context_ if context_ is not None else doc.get("context", {}),
                "metadata": {**doc.get("metadata", {}), **(metadata or {})},
                "name": name if name is not None else doc["name"],
                "description": description if description is not None else doc.get("description"),
            }

        return self._new_version(assistant_id, change)

    def _new_version(self, assistant_id: str, change: Callable[[Doc], Doc]) -> Doc:
        assistant_id = self.get(assistant_id)["assistant_id"]
        versions_key = self.keys.assistant_versions(assistant_id)
        for _ in range(20):  # optimistic: retry when another writer added a version meanwhile
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(versions_key, self.keys.assistants())  # type: ignore[no-untyped-call]  # redis-py leaves watch untyped
                    current = self._load(assistant_id)
                    if current is None:
                        raise NotFoundError(f"Assistant {assistant_id} not found")
                    number = int(pipe.hlen(versions_key)) + 1
                    now = now_iso()
                    doc = {**change(current), "version": number, "updated_at": now}
                    version = {k: v for k, v in doc.items() if k != "updated_at"}
                    version["created_at"] = now
                    pipe.multi()
                    pipe.hset(
                        versions_key,
                        str(number),
                        self.sealer.seal_json(version, versions_key, str(number)),
                    )
                    pipe.hset(
                        self.keys.assistants(),
                        assistant_id,
                        self.sealer.seal_json(doc, self.keys.assistants(), assistant_id),
                    )
                    pipe.execute()
                    return doc
                except redis.WatchError:
                    continue
        raise ConflictError(f"assistant {assistant_id} is being changed by others; try again")

    def set_latest(self, assistant_id: str, version: int) -> Doc:
        doc = self.get(assistant_id)
        versions_key = self.keys.assistant_versions(doc["assistant_id"])
        raw: bytes | None = self.redis.hget(versions_key, str(version))  # type: ignore[assignment]  # bytes client
        if raw is None:
            raise NotFoundError(f"Version {version} not found for assistant {doc['assistant_id']}")
        chosen = self.sealer.open_json(raw, versions_key, str(version))
        doc.update(
            {
                k: chosen.get(k)
                for k in ("config", "context", "metadata", "name", "description", "graph_id")
            },
            version=int(chosen["version"]),
            updated_at=now_iso(),
        )
        self.redis.hset(
            self.keys.assistants(),
            doc["assistant_id"],
            self.sealer.seal_json(doc, self.keys.assistants(), doc["assistant_id"]),
        )
        return doc

    def delete(self, assistant_id: str) -> str:
        doc = self.get(assistant_id)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.assistants(), doc["assistant_id"])
            pipe.delete(self.keys.assistant_versions(doc["assistant_id"]))
            pipe.execute()
        return str(doc["assistant_id"])


def graph_name(orch: Orchestrator, spec: Any) -> str:
    """An assistant's name as the reference gives it.

    The compiled graph's own `name`, unless it is LangGraph's default (or the graph is built per
    run): then the graph id.
    """
    if getattr(spec, "per_config", False):
        return str(spec.name)
    try:
        name = getattr(orch.compiled(spec.name), "name", None)
    except GraphwrightError as exc:  # a graph that cannot be built yet still gets its assistant
        log.warning("graph %s could not be compiled for its assistant's name: %s", spec.name, exc)
        return str(spec.name)
    return str(name) if name and name != "LangGraph" else str(spec.name)
