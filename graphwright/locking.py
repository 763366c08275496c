"""One run per thread at a time: a fenced Redis lock with expiry, renewed while the run lives.

Every acquisition increments the thread's fence counter (`Keys.fence`); the new value
is the run's fencing token, kept in the lock value and passed to every write of the run
(checkpoints, idempotency records, trace), which refuse a token that is no longer the
newest. A holder that was frozen past the lock's expiry therefore cannot write after
another process took the thread over.

A lock left by a dead process is taken over at once instead of waiting for the expiry,
but only when the holder is provably gone (`lock_owner`). Runs on the run loop (the Python
API's and the HTTP executor's) take, renew (a task) and give back their lock through its
asyncio client; sync callers use the blocking client, renewed by a thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis

from graphwright.aconnect import AsyncScript, batch
from graphwright.checkpoints.direct import Command
from graphwright.checkpoints.errors import LockLostError, RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.lock_owner import _LIVE, _stale, identity, lock_id
from graphwright_errors import UserError

if TYPE_CHECKING:  # the `show` and `trace` paths load no LangGraph (tests/cli/test_startup.py)
    from graphwright.checkpoints.saver_base import AsyncClient

log = logging.getLogger(__name__)

LOCK_TTL_S = 30.0
# How long a deleted thread's fence counter stays, so a reused id does not restart at 1:
# as long as an idempotency record, longer than any process stays frozen in practice.
FENCE_RETENTION_S = 30 * 24 * 3600

# KEYS: lock, fence. ARGV: owner JSON, ttl ms, the stale value to replace ('' = must be free).
_ACQUIRE = """
local cur = redis.call('GET', KEYS[1])
local owner = cjson.decode(ARGV[1])
if cur then
  local ok, held = pcall(cjson.decode, cur)
  if ok and type(held) == 'table' and held['id'] == owner['id'] then return cur end
  if cur ~= ARGV[3] then return false end
end
owner['fence'] = redis.call('INCR', KEYS[2])
local value = cjson.encode(owner)
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return value
"""
# KEYS: lock. ARGV: our value, ttl ms. 1 when renewed, 0 when the lock is not ours any more.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS: lock, fence. ARGV: our value. Moves the fence on only while the lock is still ours.
_FENCE_OUT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('INCR', KEYS[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


_AACQUIRE, _ARENEW, _AFENCE_OUT, _ARELEASE = (
    AsyncScript(body) for body in (_ACQUIRE, _RENEW, _FENCE_OUT, _RELEASE)
)


class ThreadBusyError(UserError):
    """Another invoke or resume is running on this thread."""


def retire_fence(client: redis.Redis, keys: Keys, thread_id: str) -> None:
    """Move a deleted thread's fence on instead of deleting it.

    Every earlier token is refused, and a thread created again under the same id goes on counting
    from there.
    """
    with client.pipeline(transaction=True) as pipe:
        pipe.incr(keys.fence(thread_id))
        pipe.expire(keys.fence(thread_id), FENCE_RETENTION_S)
        pipe.execute()


def held(client: redis.Redis, keys: Keys, thread_id: str) -> bool:
    """Whether a live process holds the thread's lock."""
    return not _stale(client.get(keys.lock(thread_id)))


@dataclass
class ThreadLock:
    """A held lock: its fencing token, and whether renewal has lost it."""

    thread_id: str
    fence: int
    value: str
    lost: threading.Event = field(default_factory=threading.Event)
    # Set to stop renewing: on release, or just before a script that deletes the lock itself.
    renewal_stop: threading.Event = field(default_factory=threading.Event)
    renewer: asyncio.Task[None] | None = None  # the renewal task of a lock taken natively
    released: bool = False  # a script that ended the run deleted it already
    reads: list[Any] = field(default_factory=list)  # replies of the reads taken with it

    def check(self) -> None:
        """Raise LockLostError when the lock could not be kept."""
        if self.lost.is_set():
            raise LockLostError(
                f"the run lock of thread {self.thread_id!r} was lost (expired or taken over); "
                "this process stopped writing to it"
            )


def _acquire(client: redis.Redis, keys: Keys, thread_id: str, ttl_s: float) -> ThreadLock | None:
    name, fence = keys.lock(thread_id), keys.fence(thread_id)
    owner_id = uuid.uuid4().hex
    owner = json.dumps({**identity(), "id": owner_id})
    ttl_ms = int(ttl_s * 1000)
    _LIVE.add(owner_id)  # live from before the lock exists in Redis until after it is gone
    try:
        value = client.eval(_ACQUIRE, 2, name, fence, owner, ttl_ms, "")
        if value is None:
            current = client.get(name)
            if current is not None and _stale(current):  # a dead holder: replace exactly that value
                value = client.eval(_ACQUIRE, 2, name, fence, owner, ttl_ms, current)
        if value is None:
            _LIVE.discard(owner_id)
            return None
        text = value.decode() if isinstance(value, bytes) else str(value)
        wait = ReplicaWait.from_env()
        if wait is not None:
            # A promoted replica that never saw this INCR would hand the same token out again.
            wait.acknowledge(
                client, keys.replica_ack(thread_id), f"run lock of thread {thread_id!r}"
            )
    except BaseException:
        _LIVE.discard(owner_id)  # taken with its reply lost, or not safe: stale for us at once
        raise
    return ThreadLock(thread_id=thread_id, fence=int(json.loads(text)["fence"]), value=text)


def _renew(
    client: redis.Redis, keys: Keys, lock: ThreadLock, ttl_s: float, stop: threading.Event
) -> None:
    """Renew every third of the TTL; on errors retry with backoff until the lock would expire."""
    name, ttl_ms = keys.lock(lock.thread_id), int(ttl_s * 1000)
    last_ok, wait = time.monotonic(), ttl_s / 3
    while not stop.wait(wait):
        try:
            renewed = client.eval(_RENEW, 1, name, lock.value, ttl_ms)
        except redis.RedisError as exc:
            if time.monotonic() - last_ok >= ttl_s:
                log.error(
                    "thread %s: lock expired while Redis was unreachable (%s)", lock.thread_id, exc
                )
                lock.lost.set()
                return
            wait = min(ttl_s / 10, 0.05 * 2 ** random.uniform(0, 4))
            continue
        if not renewed:
            if stop.is_set():  # released under it (the run's end deletes the lock itself)
                return
            log.error("thread %s: the run lock was taken over; this run stops", lock.thread_id)
            lock.lost.set()
            return
        last_ok, wait = time.monotonic(), ttl_s / 3


def _take(
    client: redis.Redis, keys: Keys, thread_id: str, ttl_s: float
) -> tuple[ThreadLock, threading.Event]:
    try:
        lock = _acquire(client, keys, thread_id, ttl_s)
    except redis.RedisError as exc:
        raise RedisUnavailableError(
            f"cannot take the run lock of thread {thread_id!r}: {exc}"
        ) from exc
    if lock is None:
        raise ThreadBusyError(
            f"thread {thread_id!r} is already running in another process; "
            "wait for it to finish, or use another thread"
        )
    # Renewal stays a thread on the blocking client: it keeps the lock while a sync node, a
    # tool or a busy event loop holds the run up, and the fence stops a frozen holder anyway.
    stop = lock.renewal_stop
    renewer = threading.Thread(
        target=_renew,
        args=(client, keys, lock, ttl_s, stop),
        daemon=True,
        name=f"gw-lock-{thread_id}",
    )
    renewer.start()
    return lock, stop


def _give_back(client: redis.Redis, keys: Keys, lock: ThreadLock, stop: threading.Event) -> None:
    stop.set()
    try:
        with suppress(redis.RedisError):  # expired or taken over: nothing to release
            client.eval(_RELEASE, 1, keys.lock(lock.thread_id), lock.value)
    finally:
        _LIVE.discard(lock_id(lock.value) or "")  # a lock whose release failed is stale for us now


@contextmanager
def thread_lock(
    client: redis.Redis, keys: Keys, thread_id: str, *, ttl_s: float = LOCK_TTL_S
) -> Iterator[ThreadLock]:
    """Hold the thread's lock for the duration, renewing it; yields its fencing token."""
    lock, stop = _take(client, keys, thread_id, ttl_s)
    try:
        yield lock
    finally:
        _give_back(client, keys, lock, stop)


# --- native: redis.asyncio on the run loop, renewed by a task ------------------------


async def _aacquire(
    client: AsyncClient,
    keys: Keys,
    thread_id: str,
    ttl_s: float,
    reads: Sequence[Command] = (),
    owner_id: str | None = None,
) -> ThreadLock | None:
    """`_acquire` over an asyncio client.

    `reads` go in the same round trip, after it (so they see the thread as its new owner does).
    """
    name, fence = keys.lock(thread_id), keys.fence(thread_id)
    owner_id = owner_id or uuid.uuid4().hex
    owner = json.dumps({**identity(), "id": owner_id})
    ttl_ms = int(ttl_s * 1000)
    _LIVE.add(owner_id)
    try:
        take = [_AACQUIRE.command((name, fence), (owner, ttl_ms, "")), *reads]
        value, *got = await batch(client, take)
        if value is None:
            current = await client.get(name)
            if current is not None and _stale(current):
                take = [_AACQUIRE.command((name, fence), (owner, ttl_ms, current)), *reads]
                value, *got = await batch(client, take)
        if value is None:
            _LIVE.discard(owner_id)
            return None
        text = value.decode() if isinstance(value, bytes) else str(value)
        wait = ReplicaWait.from_env()
        if wait is not None:
            what = f"run lock of thread {thread_id!r}"
            await wait.aacknowledge(client, keys.replica_ack(thread_id), what)
    except BaseException:
        _LIVE.discard(owner_id)
        raise
    fenced = int(json.loads(text)["fence"])
    return ThreadLock(thread_id=thread_id, fence=fenced, value=text, reads=got)


async def _arenew(client: AsyncClient, keys: Keys, lock: ThreadLock, ttl_s: float) -> None:
    """`_renew` as a task of the run loop."""
    name, ttl_ms = keys.lock(lock.thread_id), int(ttl_s * 1000)
    last_ok, wait = time.monotonic(), ttl_s / 3
    while True:
        await asyncio.sleep(wait)
        if lock.renewal_stop.is_set():
            return
        try:
            renewed = await _ARENEW(client, (name,), (lock.value, ttl_ms))
        except redis.RedisError as exc:
            if time.monotonic() - last_ok >= ttl_s:
                log.error(
                    "thread %s: lock expired while Redis was unreachable (%s)", lock.thread_id, exc
                )
                lock.lost.set()
                return
            wait = min(ttl_s / 10, 0.05 * 2 ** random.uniform(0, 4))
            continue
        if not renewed:
            if lock.renewal_stop.is_set():
                return
            log.error("thread %s: the run lock was taken over; this run stops", lock.thread_id)
            lock.lost.set()
            return
        last_ok, wait = time.monotonic(), ttl_s / 3


async def _atake(
    client: AsyncClient,
    keys: Keys,
    thread_id: str,
    ttl_s: float,
    reads: Sequence[Command],
    owner_id: str | None,
) -> ThreadLock:
    try:
        lock = await _aacquire(client, keys, thread_id, ttl_s, reads, owner_id)
    except redis.RedisError as exc:
        raise RedisUnavailableError(
            f"cannot take the run lock of thread {thread_id!r}: {exc}"
        ) from exc
    if lock is None:
        raise ThreadBusyError(
            f"thread {thread_id!r} is already running in another process; "
            "wait for it to finish, or use another thread"
        )
    lock.renewer = asyncio.create_task(
        _arenew(client, keys, lock, ttl_s), name=f"gw-lock-{thread_id}"
    )
    return lock


async def _agive_back(client: AsyncClient, keys: Keys, lock: ThreadLock) -> None:
    lock.renewal_stop.set()
    if lock.renewer is not None:
        lock.renewer.cancel()
    try:
        if not lock.released:
            with suppress(redis.RedisError):
                await _ARELEASE(client, (keys.lock(lock.thread_id),), (lock.value,))
    finally:
        _LIVE.discard(lock_id(lock.value) or "")


async def _auntake(client: AsyncClient, keys: Keys, taking: asyncio.Future[ThreadLock]) -> None:
    try:
        lock = await taking
    except Exception:
        return
    await _agive_back(client, keys, lock)


async def _afence_out(client: AsyncClient, keys: Keys, lock: ThreadLock) -> None:
    with suppress(redis.RedisError):
        name, fence = keys.lock(lock.thread_id), keys.fence(lock.thread_id)
        await _AFENCE_OUT(client, (name, fence), (lock.value,))


def athread_lock(
    client: AsyncClient,
    keys: Keys,
    thread_id: str,
    *,
    ttl_s: float = LOCK_TTL_S,
    reads: Sequence[Command] = (),
    owner_id: str | None = None,
) -> AbstractAsyncContextManager[ThreadLock]:
    """`thread_lock` for a coroutine on the loop `client` (redis.asyncio) lives on.

    The lock is taken, renewed (a task) and given back there; `reads` (commands) are sent with
    the acquisition, their replies in `ThreadLock.reads`; `owner_id` (the lock value's `id`)
    lets them name the holder they write for (`RunWrites.owned`). A caller cancelled while
    the lock is being taken leaves none behind: the taking runs on, and gives it back.
    """
    return _native_athread_lock(client, keys, thread_id, ttl_s, reads, owner_id)


@asynccontextmanager
async def _native_athread_lock(
    client: AsyncClient,
    keys: Keys,
    thread_id: str,
    ttl_s: float,
    reads: Sequence[Command],
    owner_id: str | None,
) -> AsyncIterator[ThreadLock]:
    taking = asyncio.ensure_future(_atake(client, keys, thread_id, ttl_s, reads, owner_id))
    try:
        lock = await asyncio.shield(taking)
    except asyncio.CancelledError:
        await asyncio.shield(_auntake(client, keys, taking))
        raise
    try:
        yield lock
    except asyncio.CancelledError:
        # A cancelled run may leave a sync node behind in the loop's executor: moving the
        # fence on before the lock goes refuses whatever that node still writes.
        await asyncio.shield(_afence_out(client, keys, lock))
        raise
    finally:
        # Shielded: a cancelled run still gives its lock back before it ends. One the run's
        # end write deleted is given back without a round trip: nothing to shield (no task).
        give_back = _agive_back(client, keys, lock)
        await (give_back if lock.released else asyncio.shield(give_back))
