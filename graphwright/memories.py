"""Long-term memory around runs.

Recalled into a run that names its user, and what the user explicitly asked to be remembered stored
when the run ends (never text from tools).
"""

from __future__ import annotations

import json
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from graphwright import run_meta
from graphwright.checkpoints.memory import MemoryBook, MemoryRecord, Source, effective, scope_of
from graphwright.nodes.tracing import model_call_event
from graphwright.remember import ExtractionError, aextract
from graphwright.run_writes import RunWrites


class Memories:
    """One user's records and the project's, read and written for the runs that name the user.

    A run's recall, note and remember are coroutines on its event loop (`writes`, the book's
    asyncio store, the model's own async call): no thread hop, even while the model extracts.
    """

    def __init__(
        self,
        book: MemoryBook,
        model: BaseChatModel,
        writes: RunWrites,
        project: str,
    ) -> None:
        self.book, self.model, self.writes, self.project = book, model, writes, project

    def scopes(self, user_id: str) -> list[str]:
        """The user's scope and the project's (checks `user_id` before any read)."""
        return [scope_of("user", user_id), scope_of("project", self.project)]

    def recall(self, user_id: str) -> list[MemoryRecord]:
        """The user's records and the project's, oldest update first."""
        return self.book.recall(self.scopes(user_id))

    async def alines(self, scopes: list[str]) -> list[str]:
        """What a run that uses memory gets in its input: one line per record in effect."""
        return [f"{r.kind} {r.key}: {r.value}" for r in effective(await self.book.arecall(scopes))]

    def forget(self, user_id: str, key: str) -> bool:
        return self.book.forget(scope_of("user", user_id), key)

    async def anote(
        self, thread_id: str, user_id: str, messages: list[dict[str, Any]], fence: int | None = None
    ) -> None:
        """Keep the run's own user messages on the thread until the run ends (fenced)."""
        await run_meta.anoted(self.writes, thread_id, fence, user_id, messages)

    async def aremember(self, thread_id: str, run_id: str, fence: int | None = None) -> None:
        """Store what the user's own messages of this run asked to be remembered.

        With the run's `fence`, a run that lost the thread stores nothing: the note is
        taken (fenced) before any memory is written.
        """
        meta = await self.writes.read(thread_id)
        if not meta.get("user_id") or not meta.get("remember"):
            return
        messages = json.loads(meta["remember"])
        await run_meta.aremembered(self.writes, thread_id, fence)
        started = time.time()
        try:
            found, reply = await aextract(self.model, messages)
        except ExtractionError as exc:
            if exc.reply is not None:  # the call happened and used tokens
                await self._called(thread_id, run_id, fence, exc.reply, started)
            await self.writes.event(
                thread_id, fence, "remember", {"run_id": run_id, "stored": [], "error": str(exc)}
            )
            return
        await self._called(thread_id, run_id, fence, reply, started)
        known = {m.get("id") for m in messages}
        stored = []
        for c in found.memories:
            source = Source(
                thread_id=thread_id, message_id=c.message_id if c.message_id in known else None
            )
            record = await self.book.aremember(
                scope_of("user", meta["user_id"]), c.kind, c.key, c.value, source
            )
            stored.append({"key": record.key, "value": record.value, "scope": record.scope})
        await self.writes.event(thread_id, fence, "remember", {"run_id": run_id, "stored": stored})

    async def _called(
        self, thread_id: str, run_id: str, fence: int | None, reply: AIMessage, started: float
    ) -> None:
        """The extraction's `model_call` trace event (its usage counts in the run's)."""
        fields = model_call_event(reply, run_id=run_id, node="remember", step=0, started=started)
        await self.writes.event(thread_id, fence, "model_call", fields)
