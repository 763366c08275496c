"""The cron scheduler: every worker runs one; each due run is enqueued exactly once.

A due run is claimed with a compare-and-set on its cron's score in the `due` sorted set
(only the scheduler that moves the score from this slot to the next one wins), and the
same script notes the claim in `firing`. The winner enqueues the run under an id
derived from the cron and the slot, then clears the note. A claim whose scheduler died
before clearing it is taken over after `lease_s` and enqueued again under the same id,
which the run store refuses as a duplicate (one atomic create of the record keyed by cron
and slot): exactly once does not depend on the lease, which only bounds how soon a dead
claimer's run starts. Missed slots (every scheduler down) are run once, together, when one
comes back (as the reference), and the cron is due again at its next slot after that. A
cron that cannot start its run is recorded on the cron and skipped; nothing but Redis
being away stops a tick, and nothing stops the loop.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis

from graphwright.checkpoints.keys import Keys
from graphwright.server.records.cron_store import CronStore, next_after, parse_time
from graphwright_errors import InfrastructureError

log = logging.getLogger(__name__)
SEP = "|"

# KEYS: due, firing. ARGV: cron id, expected slot, next slot ('' = none), now.
_CLAIM = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1] .. '|' .. ARGV[2])
return 1
"""
# KEYS: firing. ARGV: member, expected claim time, now.
_RECLAIM = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
"""

Fire = Callable[[dict[str, Any], str, str | None], None]
"""Enqueue the cron's run as `run_id` (on the cron's thread, or `None`: a new thread
named after the run); called again with the same id after a takeover, so idempotent."""


def run_id_of(cron_id: str, slot: int) -> str:
    """The id of the run a cron starts at `slot`: the same for every scheduler."""
    return str(uuid.uuid5(uuid.UUID(cron_id), str(slot)))


class CronScheduler:
    """Claims due runs and hands them to `fire`; `tick` is one pass, `run_forever` loops."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        fire: Fire,
        *,
        interval_s: float = 1.0,
        lease_s: float = 10.0,
        batch: int = 100,
    ) -> None:
        self.redis = client
        self.keys = keys
        self.crons = CronStore(client, keys)
        self.fire = fire
        self.interval_s = interval_s
        self.lease_s = lease_s
        self.batch = batch
        self.stop = threading.Event()
        self._claim = client.register_script(_CLAIM)
        self._reclaim = client.register_script(_RECLAIM)

    def run_forever(self) -> None:
        while not self.stop.is_set():
            try:
                self.tick()
            except (redis.RedisError, InfrastructureError):
                log.exception("cron scheduler: Redis failed; trying again")
            except Exception:  # a bug must not stop every cron of every worker for good
                log.exception("cron scheduler: the tick failed; trying again")
            self.stop.wait(self.interval_s)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run_forever, name="cron-scheduler", daemon=True)
        thread.start()
        return thread

    def tick(self, now: float | None = None) -> int:
        """Enqueue every run due by `now`, and those whose claimer died; returns how many."""
        now = time.time() if now is None else now
        fired = self._take_over(now)
        rows: list[tuple[bytes, float]] = self.redis.zrangebyscore(  # type: ignore[assignment]  # bytes client
            self.keys.cron_due(), "-inf", now, start=0, num=self.batch, withscores=True
        )
        for raw_id, score in rows:
            cron_id = raw_id.decode()
            try:
                fired += self._claim_and_fire(cron_id, int(score), now)
            except (redis.RedisError, InfrastructureError):
                raise
            except Exception as exc:  # its document cannot be scheduled: the others go on
                log.warning("cron %s cannot be scheduled and is taken off: %s", cron_id, exc)
                self.crons.record_failure(cron_id, int(score), exc)
                self.redis.zrem(self.keys.cron_due(), cron_id)
        return fired

    def _claim_and_fire(self, cron_id: str, slot: int, now: float) -> int:
        cron = self.crons.find(cron_id)
        if cron is None:  # deleted between the two reads
            self.redis.zrem(self.keys.cron_due(), cron_id)
            return 0
        # The next slot after now, not after this one: slots missed while every scheduler
        # was down are run once together (this run), as the reference does, not each once.
        following: int | None = next_after(
            cron["schedule"], max(slot, int(now)), cron.get("timezone")
        )
        end = parse_time(cron.get("end_time"))
        if end is not None and following is not None and following > end:
            following = None
        won = self._claim(
            keys=[self.keys.cron_due(), self.keys.cron_firing()],
            args=[cron_id, slot, "" if following is None else following, now],
        )
        if not won:
            return 0  # another scheduler took this slot
        self._fire(cron, slot)
        return 1

    def _fire(self, cron: dict[str, Any], slot: int) -> None:
        member = f"{cron['cron_id']}{SEP}{slot}"
        try:
            self.fire(cron, run_id_of(cron["cron_id"], slot), cron.get("thread_id"))
        except (redis.RedisError, InfrastructureError):
            raise  # the claim stays noted: a scheduler takes it over after the lease
        except Exception as exc:  # its thread or assistant is gone, its body invalid: skipped
            log.warning("cron %s: the run due at %s cannot start: %s", cron["cron_id"], slot, exc)
            self.crons.record_failure(cron["cron_id"], slot, exc)
        self.redis.zrem(self.keys.cron_firing(), member)

    def _take_over(self, now: float) -> int:
        stale: list[tuple[bytes, float]] = self.redis.zrangebyscore(  # type: ignore[assignment]  # bytes client
            self.keys.cron_firing(), "-inf", now - self.lease_s, withscores=True
        )
        taken = 0
        for raw, claimed_at in stale:
            member = raw.decode()
            if not self._reclaim(keys=[self.keys.cron_firing()], args=[member, claimed_at, now]):
                continue
            cron_id, _, slot = member.rpartition(SEP)
            cron = self.crons.find(cron_id)
            if cron is None:
                self.redis.zrem(self.keys.cron_firing(), member)
                continue
            log.warning(
                "cron %s: taking over the run due at %s from a scheduler that stopped",
                cron_id,
                slot,
            )
            self._fire(cron, int(slot))
            taken += 1
        return taken
