"""The gate's decisions, recorded in Redis beside the thread and never in its graph state.

The graph state is writable through the API (`update_state`, `Command.update`, a
fork), so it can claim a call was approved but cannot make it so. Only the gate node
writes this hash, after checking the reviewer's answer against the pending calls and
under the run's fencing token; `act` runs a gated call only when a decision for that
call id and that digest of its arguments is here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import redis

from graphwright.checkpoints.errors import LockLostError, RedisUnavailableError
from graphwright.checkpoints.keys import Keys, escape
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.tools.records import Spend

Granted = Literal["approve", "edit", "retry", "mark_done"]

# KEYS: decisions, fence, registry. ARGV: fence, ttl, then field/value pairs ('' deletes).
_WRITE = """
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 'fenced' end
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('SADD', KEYS[3], KEYS[1])
end
return 'ok'
"""


@dataclass(frozen=True, kw_only=True)
class GateDecision:
    """What a reviewer allowed for one call: the arguments (by digest) and, settled, its result."""

    action: Granted
    digest: str
    result: str | None = None  # the reviewer's text for `mark_done`


class Approvals:
    """Reads and writes the recorded gate decisions of one Redis, under one key prefix."""

    def __init__(
        self, client: redis.Redis, keys: Keys, *, ttl_s: int, wait: ReplicaWait | None = None
    ) -> None:
        """`ttl_s` matches the idempotency records: a decision lives as long as its call's."""
        self.redis = client
        self.keys = keys
        self.ttl_s = ttl_s
        self.wait = wait or ReplicaWait.from_env()

    def record(
        self,
        thread_id: str,
        granted: Mapping[str, GateDecision],
        revoked: Iterable[str] = (),
        *,
        fence: int | None,
    ) -> None:
        """Grant and revoke in one fenced script; a stale run's gate records nothing."""
        pairs: list[bytes | str] = []
        key = self.keys.gate_decisions(thread_id)
        for call_id, decision in granted.items():
            text = json.dumps(
                {"action": decision.action, "digest": decision.digest, "result": decision.result}
            )
            pairs += [escape(call_id), self.keys.sealer.seal_text(text, key, escape(call_id))]
        for call_id in revoked:
            pairs += [escape(call_id), ""]
        if not pairs:
            return
        keys = [key, self.keys.fence(thread_id), self.keys.registry(thread_id)]
        token = "" if fence is None else str(fence)
        try:
            reply = self.redis.eval(_WRITE, len(keys), *keys, token, self.ttl_s, *pairs)
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"cannot record the gate's decisions ({exc})") from exc
        if _text(reply) == "fenced":
            raise LockLostError(
                f"thread {thread_id!r} is held by a newer run; the gate's "
                "decisions were not recorded"
            )
        if self.wait is not None:
            self.wait.acknowledge(self.redis, self.keys.replica_ack(thread_id), "gate decisions")

    def spend_retry(self, thread_id: str, call_id: str, digest: str) -> Spend:
        """A retry allows one attempt.

        When it claims the write's record, the decision becomes an approval of the same arguments,
        so an attempt killed in its turn comes back to the reviewer as an unknown outcome instead of
        running again.
        """
        key = self.keys.gate_decisions(thread_id)
        text = json.dumps({"action": "approve", "digest": digest, "result": None})
        return Spend(
            key=key,
            field=escape(call_id),
            value=self.keys.sealer.seal_text(text, key, escape(call_id)),
        )

    def get(self, thread_id: str, call_id: str) -> GateDecision | None:
        found = self.held(thread_id, call_id)
        return found[0] if found is not None else None

    def held(self, thread_id: str, call_id: str) -> tuple[GateDecision, bytes] | None:
        """The decision on the call and its stored form, which `spend` expects to find."""
        key = self.keys.gate_decisions(thread_id)
        try:
            raw = self.redis.hget(key, escape(call_id))
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"cannot read the gate's decision on {call_id} ({exc})"
            ) from exc
        if raw is None:
            return None
        data = json.loads(self.keys.sealer.open_text(raw, key, escape(call_id)))
        decision = GateDecision(action=data["action"], digest=data["digest"], result=data["result"])
        return decision, raw if isinstance(raw, bytes) else str(raw).encode()

    def spend(self, thread_id: str, call_id: str, stored: bytes) -> Spend:
        """An approval used up by the claim of the execution it allowed (`Records.claim`).

        In the same script, and only while it is still `stored`: of two executions of one approved
        call (a replay, a fork, a forged update) exactly one claims it.
        """
        return Spend(
            key=self.keys.gate_decisions(thread_id), field=escape(call_id), value="", expect=stored
        )

    def mark_tainted(self, thread_id: str, *, fence: int | None) -> None:
        """Remember, fenced, that a run of the thread read untrusted content."""
        keys = [
            self.keys.taint(thread_id),
            self.keys.fence(thread_id),
            self.keys.registry(thread_id),
        ]
        token = "" if fence is None else str(fence)
        try:
            reply = self.redis.eval(_WRITE, len(keys), *keys, token, self.ttl_s, "tainted", "1")
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"cannot record the thread's taint ({exc})") from exc
        if _text(reply) == "fenced":
            raise LockLostError(
                f"thread {thread_id!r} is held by a newer run; its taint was not recorded"
            )

    def tainted(self, thread_id: str) -> bool:
        """Whether a run of the thread read untrusted content (`mark_tainted`)."""
        try:
            return bool(self.redis.hexists(self.keys.taint(thread_id), "tainted"))
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"cannot read the thread's taint ({exc})") from exc


def _text(value: object) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
