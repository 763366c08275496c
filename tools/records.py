"""Idempotency records of write calls: key, argument digest, status and result in one hash.

A record is `claimed` when a write starts, `done` with its observation when it
returns, and `unknown` when it timed out. A claim that is still there when the call
comes round again means the process running it died mid-tool: its outcome is unknown
and it is never run again without a reviewer's word. Records never expire into a
re-run; their TTL only bounds how long a replay stays available.

Every script checks the run's fencing token first when one is given, so a process that
lost its thread lock cannot claim or settle anything.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Literal

import redis

from graphwright.checkpoints.errors import LockLostError, RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.replicas import ReplicaWait

Status = Literal["claimed", "done", "unknown"]

_FENCE = """
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return {'fenced'} end
"""
# KEYS: record, fence, registry[, gate decisions]. ARGV: fence, digest, attempt, ttl, tool,
# key, now, reclaim[, decision field, its replacement ('' deletes), the decision expected]:
# the claim spends the decision that allowed it, and fails ('spent') once another did.
_CLAIM = (
    _FENCE
    + """
if KEYS[4] and ARGV[11] and redis.call('HGET', KEYS[4], ARGV[9]) ~= ARGV[11] then
  return {'spent'}
end
local status = redis.call('HGET', KEYS[1], 'status')
if status then
  local digest = redis.call('HGET', KEYS[1], 'digest')
  if digest ~= ARGV[2] then return {'conflict', digest} end
  local attempt = redis.call('HGET', KEYS[1], 'attempt')
  if attempt == ARGV[3] then return {'claimed'} end
  if status == 'done' then return {'done', redis.call('HGET', KEYS[1], 'result')} end
  if ARGV[8] ~= '1' then return {'unknown', status} end
end
redis.call('HSET', KEYS[1], 'digest', ARGV[2], 'status', 'claimed', 'attempt', ARGV[3],
           'fence', ARGV[1], 'tool', ARGV[5], 'key', ARGV[6], 'claimed_at', ARGV[7])
redis.call('HDEL', KEYS[1], 'result')
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[3], KEYS[1])
if KEYS[4] then
  if ARGV[10] == '' then redis.call('HDEL', KEYS[4], ARGV[9])
  else redis.call('HSET', KEYS[4], ARGV[9], ARGV[10]) end
end
return {'claimed'}
"""
)
# KEYS: record, fence. ARGV: fence, attempt ('' = any), status, result, ttl, required status.
_SETTLE = (
    _FENCE
    + """
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'attempt') ~= ARGV[2] then return {'lost'} end
if ARGV[6] ~= '' and redis.call('HGET', KEYS[1], 'status') ~= ARGV[6] then return {'lost'} end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'result', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return {'ok'}
"""
)


def args_digest(name: str, args: object) -> str:
    """The call's identity beyond its key: tool name and canonical arguments."""
    text = (
        args
        if isinstance(args, str)
        else json.dumps(
            args, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
        )
    )
    return hashlib.sha256(f"{name}\n{text}".encode()).hexdigest()


@dataclass(frozen=True)
class Spend:
    """What a reviewer's decision becomes when its attempt claims the record, in the same script.

    The gate decision `field` of hash `key` is replaced by `value` (deleted when empty); with
    `expect`, only while the field still holds exactly that.
    """

    key: str
    field: str
    value: bytes | str
    expect: bytes | str | None = None


@dataclass(frozen=True)
class Claim:
    """What claiming a key found.

    `claimed` (ours now), `done`, `unknown`, `conflict`, or `spent` (the decision it was to spend is
    gone: another execution used it).
    """

    outcome: Literal["claimed", "done", "unknown", "conflict", "spent"]
    attempt: str
    result: str | None = None  # the recorded observation, for `done`
    detail: str | None = None


class Records:
    """Reads and writes the records of one Redis, under one key prefix."""

    def __init__(
        self, client: redis.Redis, keys: Keys, *, ttl_s: int, wait: ReplicaWait | None = None
    ) -> None:
        """`wait` (default: GRAPHWRIGHT_WAIT_REPLICAS) makes every record wait for replicas."""
        self.redis = client
        self.keys = keys
        self.ttl_s = ttl_s
        self.wait = wait or ReplicaWait.from_env()

    def claim(
        self,
        thread_id: str,
        call_id: str,
        *,
        tool: str,
        digest: str,
        key: str,
        fence: int | None,
        reclaim: bool = False,
        spend: Spend | None = None,
    ) -> Claim:
        """Claim the call's record, or report what an earlier execution left there.

        With `spend`, the claim also uses up the decision that allowed it (see `Spend`).
        """
        attempt = uuid.uuid4().hex
        spent: tuple[bytes | str, ...] = (
            ()
            if spend is None
            else (spend.field, spend.value) + ((spend.expect,) if spend.expect is not None else ())
        )
        reply = self._run(
            _CLAIM,
            thread_id,
            call_id,
            fence,
            digest,
            attempt,
            self.ttl_s,
            tool,
            key,
            f"{time.time():.3f}",
            "1" if reclaim else "0",
            *spent,
            registry=True,
            failing="; the write was not run",
            extra_keys=(spend.key,) if spend is not None else (),
        )
        outcome = reply[0]
        if outcome == "claimed":
            return Claim("claimed", attempt)
        if outcome == "done":
            return Claim("done", attempt, result=self._open(reply[1], thread_id, call_id))
        if outcome == "spent":
            return Claim("spent", attempt)
        if outcome == "conflict":
            return Claim("conflict", attempt, detail=reply[1])
        return Claim("unknown", attempt, detail=reply[1] if len(reply) > 1 else None)

    def settle(
        self,
        thread_id: str,
        call_id: str,
        *,
        attempt: str,
        status: Status,
        result: str,
        fence: int | None,
        required: Status | None = None,
    ) -> bool:
        """Record the outcome of `attempt`; False when the record moved on (another attempt)."""
        sealed = self.keys.sealer.seal_text(  # results hold what the tool returned
            result, self.keys.idempotency(thread_id, call_id), "result"
        )
        reply = self._run(
            _SETTLE, thread_id, call_id, fence, attempt, status, sealed, self.ttl_s, required or ""
        )
        return reply[0] == "ok"

    def get(self, thread_id: str, call_id: str) -> dict[str, str]:
        raw = self.redis.hgetall(self.keys.idempotency(thread_id, call_id))
        record = {_text(k): _text(v) for k, v in raw.items()}
        if "result" in record:
            record["result"] = self._open(record["result"], thread_id, call_id)
        return record

    def _open(self, stored: str, thread_id: str, call_id: str) -> str:
        return self.keys.sealer.open_text(
            stored.encode("utf-8", "surrogateescape"),
            self.keys.idempotency(thread_id, call_id),
            "result",
        )

    def _run(
        self,
        script: str,
        thread_id: str,
        call_id: str,
        fence: int | None,
        *args: object,
        registry: bool = False,
        failing: str = "",
        extra_keys: tuple[str, ...] = (),
    ) -> list[str]:
        keys = [self.keys.idempotency(thread_id, call_id), self.keys.fence(thread_id)]
        if registry:
            keys.append(self.keys.registry(thread_id))
        keys += extra_keys
        token = "" if fence is None else str(fence)
        try:
            reply = self.redis.eval(script, len(keys), *keys, token, *args)  # type: ignore[arg-type]  # redis-py types
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"cannot update the idempotency record of call {call_id} ({exc}){failing}"
            ) from exc
        out = [_text(v) if v is not None else "" for v in reply]
        if out[0] == "fenced":
            raise LockLostError(
                f"thread {thread_id!r} is held by a newer run; call {call_id} was not recorded"
            )
        if self.wait is not None:
            self.wait.acknowledge(
                self.redis,
                self.keys.replica_ack(thread_id),
                f"idempotency record of call {call_id}",
            )
        return out


def _text(value: bytes | str) -> str:
    """Reply text; sealed bytes survive the round trip (`surrogateescape`) to be opened."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
