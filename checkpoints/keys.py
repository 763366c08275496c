"""Every Redis key graphwright uses is built here and nowhere else.

All keys of one thread carry the hash tag ``{<thread>}`` so Redis Cluster keeps a
thread on one slot and its multi-key transactions stay legal. Ids are
percent-encoded, so ``:``, ``{``, ``}``, ``|``, spaces and non-ASCII text cannot
break the key grammar or the hash tag.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote, unquote

from checkpoints.sealed import Sealer

DEFAULT_PREFIX = "gw"


@lru_cache(maxsize=4096)
def escape(value: str) -> str:
    """Percent-encode an id so it is a safe, reversible key segment."""
    return quote(value, safe="")


def unescape(segment: str) -> str:
    """Invert :func:`escape`."""
    return unquote(segment)


@dataclass(frozen=True, kw_only=True)
class Keys:
    """Key templates under one prefix (tests give each test its own prefix)."""

    prefix: str = DEFAULT_PREFIX
    # How the values under this prefix are sealed at rest; the keys themselves stay plain.
    sealer: Sealer = field(default_factory=Sealer, compare=False, repr=False)

    # --- one thread (all share the slot of ``{thread}``) ---------------------

    def thread_tag(self, thread_id: str) -> str:
        return f"{self.prefix}:{{{escape(thread_id)}}}"

    def registry(self, thread_id: str) -> str:
        """Set of every other key of the thread: for TTL refresh, delete and copy."""
        return f"{self.thread_tag(thread_id)}:keys"

    def namespaces(self, thread_id: str) -> str:
        """Set of the checkpoint namespaces the thread has used."""
        return f"{self.thread_tag(thread_id)}:ns"

    def head(self, thread_id: str, ns: str) -> str:
        """The newest checkpoint document of a namespace (read in the first round trip)."""
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:head"

    def checkpoints(self, thread_id: str, ns: str) -> str:
        """Hash: checkpoint id -> checkpoint document (no channel values)."""
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:cps"

    def index(self, thread_id: str, ns: str) -> str:
        """Sorted set (all scores 0, ordered by id) of the namespace's checkpoint ids."""
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:idx"

    def blobs(self, thread_id: str, ns: str) -> str:
        """Hash: ``channel NUL version`` -> serialized channel value, once per version."""
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:blobs"

    def writes(self, thread_id: str, ns: str, checkpoint_id: str) -> str:
        """Hash: ``task_id NUL idx`` -> pending write of one checkpoint."""
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:w:{escape(checkpoint_id)}"

    def thread_run(self, thread_id: str, run_id: str) -> str:
        """Set of ``ns NUL checkpoint_id`` the run wrote in this thread."""
        return f"{self.thread_tag(thread_id)}:run:{escape(run_id)}"

    def events(self, thread_id: str) -> str:
        """Stream of trace events of the thread."""
        return f"{self.thread_tag(thread_id)}:events"

    def lock(self, thread_id: str) -> str:
        """Run lock of the thread (SET NX with expiry)."""
        return f"{self.thread_tag(thread_id)}:lock"

    def meta(self, thread_id: str) -> str:
        """Hash: the thread's graph, status and times, kept by the Orchestrator."""
        return f"{self.thread_tag(thread_id)}:meta"

    def run_record(self, thread_id: str, run_id: str) -> str:
        """Hash: one HTTP run's status, kind, payload and times."""
        return f"{self.thread_tag(thread_id)}:runrec:{escape(run_id)}"

    def thread_runs(self, thread_id: str) -> str:
        """Sorted set: run ids of the thread by creation time."""
        return f"{self.thread_tag(thread_id)}:runs"

    def idempotency(self, thread_id: str, tool_call_id: str) -> str:
        """Recorded result of one side-effecting tool call."""
        return f"{self.thread_tag(thread_id)}:idem:{escape(tool_call_id)}"

    # --- global indexes (not tied to one slot) -------------------------------

    def threads(self) -> str:
        """Sorted set: escaped thread id -> last write time in milliseconds."""
        return f"{self.prefix}:threads"

    def run(self, run_id: str) -> str:
        """Set of escaped thread ids a run wrote checkpoints in."""
        return f"{self.prefix}:run:{escape(run_id)}"

    def queue(self) -> str:
        """Stream of background runs, read by the worker consumer group."""
        return f"{self.prefix}:queue"

    def outbox(self) -> str:
        """List of messages the built-in ``send_email`` tool queued."""
        return f"{self.prefix}:outbox"

    def calendar(self) -> str:
        """Hash: event id -> event of the built-in calendar tools."""
        return f"{self.prefix}:calendar"

    def effects(self) -> str:
        """Hash counting side effects per tool, so tests can prove exactly-once."""
        return f"{self.prefix}:effects"

    def rate(self, identity: str) -> str:
        """Hash: the token bucket limiting how fast one identity creates runs."""
        return f"{self.prefix}:rate:{escape(identity)}"
