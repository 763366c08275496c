"""Every Redis key graphwright uses is built here and nowhere else.

All keys of one thread carry the hash tag `{<thread>}` so Redis Cluster keeps a
thread on one slot and its multi-key transactions stay legal. Ids are
percent-encoded, so `:`, `{`, `}`, `|`, spaces and non-ASCII text cannot
break the key grammar or the hash tag.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote, unquote

from graphwright.checkpoints.sealed import Sealer

DEFAULT_PREFIX = "gw"
# The two LangGraph stores under a prefix: the users' (what graphs and `/store` read and
# write, any namespace LangGraph accepts) and graphwright's own records (its long-term
# memories), apart so that no namespace of the one can name a key of the other.
USER_STORE = "store"
SERVICE_STORE = "service-store"


@lru_cache(maxsize=4096)
def escape(value: str) -> str:
    """Percent-encode an id so it is a safe, reversible key segment."""
    return quote(value, safe="")


def unescape(segment: str) -> str:
    """Invert `escape`."""
    return unquote(segment)


@dataclass(frozen=True)
class Place:
    """Where sealed values live.

    Keys matching `glob`, in these hash or stream `fields` (None: every field, element or whole
    value). `typed`: checkpoint values (`type` then bytes), sealed through LangGraph's serializer.
    """

    glob: str
    fields: frozenset[bytes] | None = None
    typed: bool = False


@dataclass(frozen=True, kw_only=True)
class Keys:
    """Key templates under one prefix (tests give each test its own prefix)."""

    prefix: str = DEFAULT_PREFIX
    # How the values under this prefix are sealed at rest; the keys themselves stay plain.
    sealer: Sealer = field(default_factory=Sealer, compare=False, repr=False)

    # --- one thread (all share the slot of `{thread}`) ---------------------

    def thread_tag(self, thread_id: str) -> str:
        return f"{self.prefix}:{{{escape(thread_id)}}}"

    def registry(self, thread_id: str) -> str:
        """Set of keys other parts of graphwright add to the thread (trace, records).

        `delete_thread` deletes them too. The saver's own keys are fixed and not listed.
        """
        return f"{self.thread_tag(thread_id)}:keys"

    def checkpoints(self, thread_id: str) -> str:
        """Sorted set (scores 0, lexical order) of `ns NUL id NUL document`.

        Every checkpoint of the thread, grouped by namespace, oldest first within one.
        """
        return f"{self.thread_tag(thread_id)}:cp"

    def blobs(self, thread_id: str) -> str:
        """Hash: `ns NUL channel NUL version` -> serialized channel value, once per version."""
        return f"{self.thread_tag(thread_id)}:blobs"

    def writes(self, thread_id: str) -> str:
        """Hash: `ns NUL checkpoint NUL task NUL idx` -> pending write."""
        return f"{self.thread_tag(thread_id)}:w"

    def write_index(self, thread_id: str) -> str:
        """Sorted set (scores 0) of the fields of `writes`, to read a checkpoint's."""
        return f"{self.thread_tag(thread_id)}:wi"

    def run_ids(self, thread_id: str) -> str:
        """Set of the run ids that wrote checkpoints in the thread."""
        return f"{self.thread_tag(thread_id)}:rids"

    def indexed(self, thread_id: str) -> str:
        """Hash.

        The thread's global index entries already written (field `thread`, and one per run id). Set
        only after the entries are, so a first put replayed after a lost reply still writes them
        (checkpoints.ops).
        """
        return f"{self.thread_tag(thread_id)}:indexed"

    def saver_keys(self, thread_id: str) -> tuple[str, ...]:
        """Every key the saver writes for a thread: a fixed set, whatever its length."""
        return (
            self.checkpoints(thread_id),
            self.blobs(thread_id),
            self.writes(thread_id),
            self.write_index(thread_id),
            self.run_ids(thread_id),
            self.indexed(thread_id),
        )

    def ttl_keys(self, thread_id: str) -> tuple[str, ...]:
        """The keys a saver with a TTL refreshes together on every write of the thread."""
        return (
            *self.saver_keys(thread_id),
            self.registry(thread_id),
            self.meta(thread_id),
            self.events(thread_id),
            *self.event_ids(thread_id),  # the trace's replay ids go with its events
            self.thread_runs(thread_id),
            self.run_signal(thread_id),
            self.fence(thread_id),  # tokens restart only when the whole thread has expired
        )

    # --- layout 1 (read only to migrate it) ----------------------------------

    def legacy_namespaces(self, thread_id: str) -> str:
        """Layout 1's set of namespaces: its presence marks a thread to migrate."""
        return f"{self.thread_tag(thread_id)}:ns"

    def legacy_checkpoints(self, thread_id: str, ns: str) -> str:
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:cps"

    def legacy_blobs(self, thread_id: str, ns: str) -> str:
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:blobs"

    def legacy_writes(self, thread_id: str, ns: str, checkpoint_id: str) -> str:
        return f"{self.thread_tag(thread_id)}:{escape(ns)}:w:{escape(checkpoint_id)}"

    def events(self, thread_id: str) -> str:
        """Stream of trace events of the thread."""
        return f"{self.thread_tag(thread_id)}:events"

    def event_ids(self, thread_id: str) -> tuple[str, str]:
        """Hashes.

        Event id -> stream entry id of the latest events, and the generation before (rotated at
        `MAX_EVENTS`): a write replayed after a lost reply is added once.
        """
        return (
            f"{self.thread_tag(thread_id)}:events:ids",
            f"{self.thread_tag(thread_id)}:events:ids:old",
        )

    def lock(self, thread_id: str) -> str:
        """Run lock of the thread (SET NX with expiry)."""
        return f"{self.thread_tag(thread_id)}:lock"

    def fence(self, thread_id: str) -> str:
        """Integer counter, INCR on every lock acquisition; its value is the run's fencing token."""
        return f"{self.thread_tag(thread_id)}:fence"

    def meta(self, thread_id: str) -> str:
        """Hash: the thread's graph, status and times, kept by the Orchestrator."""
        return f"{self.thread_tag(thread_id)}:meta"

    def run_record(self, thread_id: str, run_id: str) -> str:
        """Hash: one HTTP run's status, kind, payload and times."""
        return f"{self.thread_tag(thread_id)}:runrec:{escape(run_id)}"

    def run_end(self, thread_id: str, run_id: str) -> str:
        """Stream: one HTTP run's final status, one entry written as it ends (waiters block)."""
        return f"{self.thread_tag(thread_id)}:runend:{escape(run_id)}"

    def thread_runs(self, thread_id: str) -> str:
        """Sorted set: run ids of the thread by creation time."""
        return f"{self.thread_tag(thread_id)}:runs"

    def run_signal(self, thread_id: str) -> str:
        """Stream: one entry per run created on the thread, so a follower blocks for the next."""
        return f"{self.thread_tag(thread_id)}:runs:new"

    def idempotency(self, thread_id: str, tool_call_id: str) -> str:
        """Recorded result of one side-effecting tool call."""
        return f"{self.thread_tag(thread_id)}:idem:{escape(tool_call_id)}"

    def gate_decisions(self, thread_id: str) -> str:
        """Hash: tool call id -> the reviewer's decision on it (JSON, bound to the call's digest).

        Only the gate's resume path writes it, never the graph state: `act` trusts a
        gated call only when this hash holds a decision for its exact arguments.
        """
        return f"{self.thread_tag(thread_id)}:gate"

    def taint(self, thread_id: str) -> str:
        """Hash.

        `tainted` -> 1 once a run of the thread read untrusted tool output. Kept here, not (only) in
        the graph state, because a caller can rewrite the state.
        """
        return f"{self.thread_tag(thread_id)}:taint"

    def replica_ack(self, thread_id: str) -> str:
        """Short-lived marker written before `WAIT` on the thread's slot (checkpoints.replicas)."""
        return f"{self.thread_tag(thread_id)}:ack"

    # --- global indexes (not tied to one slot) -------------------------------

    def threads(self) -> str:
        """Sorted set.

        Escaped thread id -> last activity time in milliseconds (the saver adds a thread when it is
        created; the Orchestrator bumps it on every run).
        """
        return f"{self.prefix}:threads"

    def review_secret(self) -> str:
        """String.

        The key of the review pages' CSRF tokens, shared by every API process; no TTL, as it lives
        as long as the deployment (deleting it voids open pages).
        """
        return f"{self.prefix}:review_secret"

    def thread_ids(self) -> str:
        """Sorted set (scores 0): escaped ids of threads with checkpoints, for stable paging."""
        return f"{self.prefix}:thread_ids"

    def run(self, run_id: str) -> str:
        """Set of escaped thread ids a run wrote checkpoints in."""
        return f"{self.prefix}:run:{escape(run_id)}"

    def queue(self) -> str:
        """Stream of background runs, read by the worker consumer group."""
        return f"{self.prefix}:queue"

    def workers(self) -> str:
        """Sorted set.

        Worker name -> epoch seconds it was last seen taking work (no TTL: one member per worker
        name, and members not seen for a while are pruned on each write).
        """
        return f"{self.prefix}:workers"

    def outbox(self) -> str:
        """List of messages the built-in `send_email` tool queued."""
        return f"{self.prefix}:outbox"

    def outbox_ids(self) -> str:
        """Hash: idempotency key -> message, so `send_email` queues a key once (outbox's slot)."""
        return f"{{{self.outbox()}}}:ids"

    def calendar(self) -> str:
        """Hash: event id -> event of the built-in calendar tools."""
        return f"{self.prefix}:calendar"

    def calendar_slots(self) -> str:
        """Hash: event id -> `start|end`, the overlap check's view of the calendar (its slot)."""
        return f"{{{self.calendar()}}}:slots"

    def effects(self) -> str:
        """Unused by graphwright itself since effects are counted from the outbox and calendar."""
        return f"{self.prefix}:effects"

    # --- HTTP service registries (each under one hash tag, so its multi-key
    # commands stay on one Redis Cluster slot) ---------------------------------

    def threads_by(self, order: str) -> str:
        """Sorted set of thread ids by `updated`, `created` or `expires` time (seconds)."""
        return f"{self.prefix}:{{threads-index}}:by:{order}"

    def threads_with_status(self, status: str) -> str:
        """Set of the ids of threads whose API status is `status`."""
        return f"{self.prefix}:{{threads-index}}:status:{status}"

    def threads_with_meta(self, key: str, value_json: str) -> str:
        """Set of the ids of threads whose metadata has `key` equal to a scalar (as JSON).

        With encryption on, named by a keyed hash of the pair, never by its text.
        """
        return self.threads_with_meta_any(key, value_json)[0]

    def threads_with_meta_any(self, key: str, value_json: str) -> list[str]:
        """The pair's set under each encryption key, newest first (a search reads them all)."""
        tags = self.sealer.tags(f"{key}\x00{value_json}".encode())
        if tags:
            return [f"{self.prefix}:{{threads-index}}:meta:h:{tag}" for tag in tags]
        return [f"{self.prefix}:{{threads-index}}:meta:{escape(key)}={escape(value_json)}"]

    def thread_memberships(self, thread_id: str) -> str:
        """Set of the metadata-index keys one thread is in (so a change can leave them)."""
        return f"{self.prefix}:{{threads-index}}:of:{escape(thread_id)}"

    def thread_search_scratch(self, token: str) -> str:
        """Short-lived sorted set one search intersects into."""
        return f"{self.prefix}:{{threads-index}}:tmp:{token}"

    def assistants(self) -> str:
        """Hash: assistant id -> the assistant's current document (JSON)."""
        return f"{self.prefix}:{{assistants}}:latest"

    def assistant_versions(self, assistant_id: str) -> str:
        """Hash: version number -> that version's document (JSON)."""
        return f"{self.prefix}:{{assistants}}:versions:{escape(assistant_id)}"

    def crons(self) -> str:
        """Hash: cron id -> the cron's document (JSON)."""
        return f"{self.prefix}:{{crons}}:all"

    def cron_due(self) -> str:
        """Sorted set: cron id -> epoch seconds of its next due run."""
        return f"{self.prefix}:{{crons}}:due"

    def cron_errors(self) -> str:
        """Hash: cron id -> why its latest failed run did not start (JSON)."""
        return f"{self.prefix}:{{crons}}:errors"

    def cron_firing(self) -> str:
        """Sorted set: `cron id|slot` claimed but not yet enqueued -> claim time."""
        return f"{self.prefix}:{{crons}}:firing"

    def rate(self, identity: str) -> str:
        """Hash: the token bucket limiting how fast one identity creates runs."""
        return f"{self.prefix}:rate:{escape(identity)}"

    # --- what is sealed at rest (`graphwright seal` seals what was written in the clear) --

    def sealed_places(self) -> tuple[Place, ...]:
        """Every place a value holding user data is sealed at when encryption is on."""
        thread, p = f"{self.prefix}:{{*}}", self.prefix
        return (
            Place(f"{thread}:meta", frozenset({b"metadata", b"remember", b"summary"})),
            Place(f"{thread}:runrec:*", frozenset({b"body", b"error", b"output"})),
            Place(f"{thread}:runev:*", frozenset({b"data"})),
            Place(f"{thread}:events", frozenset({b"e"})),
            Place(f"{thread}:idem:*", frozenset({b"result"})),
            Place(f"{p}:{USER_STORE}:*:item:*"),
            Place(f"{p}:{SERVICE_STORE}:*:item:*"),
            Place(self.crons()),
            Place(self.assistants()),
            Place(f"{p}:{{assistants}}:versions:*"),
            Place(self.calendar()),
            Place(self.outbox()),
            Place(self.outbox_ids()),
            Place(f"{thread}:cp", typed=True),
            Place(f"{thread}:blobs", typed=True),
            Place(f"{thread}:w", typed=True),
        )
