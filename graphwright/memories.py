"""Long-term memory around runs.

Recalled into a run that names its user, and what the user explicitly asked to be remembered stored
when the run ends (never text from tools).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from graphwright import run_meta
from graphwright.checkpoints.memory import MemoryBook, MemoryRecord, Source, effective, scope_of
from graphwright.checkpoints.trace import TraceWriter
from graphwright.nodes.tracing import trace_model_call
from graphwright.remember import ExtractionError, extract
from graphwright.thread_meta import ThreadMeta


class Memories:
    """One user's records and the project's, read and written for the runs that name the user."""

    def __init__(
        self,
        book: MemoryBook,
        model: BaseChatModel,
        tracer: TraceWriter,
        meta: ThreadMeta,
        project: str,
    ) -> None:
        self.book, self.model, self.tracer, self.meta, self.project = (
            book,
            model,
            tracer,
            meta,
            project,
        )

    def scopes(self, user_id: str) -> list[str]:
        """The user's scope and the project's (checks `user_id` before any read)."""
        return [scope_of("user", user_id), scope_of("project", self.project)]

    def recall(self, user_id: str) -> list[MemoryRecord]:
        """The user's records and the project's, oldest update first."""
        return self.book.recall(self.scopes(user_id))

    def lines(self, scopes: list[str]) -> list[str]:
        """What a run that uses memory gets in its input: one line per record in effect."""
        return [f"{r.kind} {r.key}: {r.value}" for r in effective(self.book.recall(scopes))]

    def forget(self, user_id: str, key: str) -> bool:
        return self.book.forget(scope_of("user", user_id), key)

    def note(
        self, thread_id: str, user_id: str, messages: list[dict[str, Any]], fence: int | None = None
    ) -> None:
        """Keep the run's own user messages on the thread until the run ends (fenced)."""
        run_meta.noted(self.meta, thread_id, fence, user_id, messages)

    def remember(self, thread_id: str, run_id: str, fence: int | None = None) -> None:
        """Store what the user's own messages of this run asked to be remembered.

        With the run's `fence`, a run that lost the thread stores nothing: the note is
        taken (fenced) before any memory is written.
        """
        meta = self.meta.read(thread_id)
        if not meta.get("user_id") or not meta.get("remember"):
            return
        messages = json.loads(meta["remember"])
        run_meta.remembered(self.meta, thread_id, fence)
        started = time.time()
        configurable: dict[str, Any] = {"thread_id": thread_id}
        if fence is not None:
            configurable["gw_fence"] = fence  # its model call's trace event is fenced too
        config: RunnableConfig = {"configurable": configurable, "run_id": uuid.UUID(run_id)}
        try:
            found, reply = extract(self.model, messages)
        except ExtractionError as exc:
            if exc.reply is not None:  # the call happened and used tokens
                trace_model_call(
                    self.tracer, config, node="remember", step=0, reply=exc.reply, started=started
                )
            self.tracer.emit(
                thread_id, "remember", fence=fence, run_id=run_id, stored=[], error=str(exc)
            )
            return
        trace_model_call(self.tracer, config, node="remember", step=0, reply=reply, started=started)
        known = {m.get("id") for m in messages}
        stored = []
        for c in found.memories:
            source = Source(
                thread_id=thread_id, message_id=c.message_id if c.message_id in known else None
            )
            record = self.book.remember(
                scope_of("user", meta["user_id"]), c.kind, c.key, c.value, source
            )
            stored.append({"key": record.key, "value": record.value, "scope": record.scope})
        self.tracer.emit(thread_id, "remember", fence=fence, run_id=run_id, stored=stored)
