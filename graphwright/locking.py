"""One run per thread at a time: a Redis lock with expiry, renewed while the run is alive.

A lock left by a process that died on this host is taken over at once instead of
waiting for the expiry.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import redis
from redis.exceptions import LockError

from checkpoints.errors import RedisUnavailableError, UserError
from checkpoints.keys import Keys

LOCK_TTL_S = 30.0


class ThreadBusyError(UserError):
    """Another invoke or resume is running on this thread."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(raw: bytes | str | None) -> bool:
    """True when the holder ran on this host and its process is gone."""
    if raw is None:
        return True
    try:
        owner = json.loads(raw)
    except ValueError:
        return False
    return bool(owner.get("host") == socket.gethostname() and not _alive(int(owner.get("pid", 0))))


def held(client: redis.Redis, keys: Keys, thread_id: str) -> bool:
    """Whether a live process holds the thread's lock."""
    return not _stale(client.get(keys.lock(thread_id)))


@contextmanager
def thread_lock(client: redis.Redis, keys: Keys, thread_id: str) -> Iterator[None]:
    """Hold the thread's lock for the duration, renewing it every third of its TTL."""
    name = keys.lock(thread_id)
    token = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "id": uuid.uuid4().hex})
    lock = client.lock(name, timeout=LOCK_TTL_S, blocking=False, thread_local=False)
    try:
        acquired = lock.acquire(token=token)
        if not acquired and _stale(client.get(name)):
            with client.pipeline() as pipe:  # take over a dead holder's lock atomically
                pipe.watch(name)  # type: ignore[no-untyped-call]  # untyped in redis-py
                if _stale(pipe.get(name)):
                    pipe.multi()
                    pipe.set(name, token, px=int(LOCK_TTL_S * 1000))
                    pipe.execute()
                    acquired = True
    except redis.WatchError:
        acquired = False
    except redis.RedisError as exc:
        raise RedisUnavailableError(f"cannot take the run lock of thread {thread_id!r}: {exc}") from exc
    if not acquired:
        raise ThreadBusyError(
            f"thread {thread_id!r} is already running in another process; "
            "wait for it to finish, or use another thread"
        )
    lock.local.token = token.encode()
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LOCK_TTL_S / 3):
            try:
                lock.reacquire()
            except (LockError, redis.RedisError):
                return

    renewer = threading.Thread(target=renew, daemon=True, name=f"gw-lock-{thread_id}")
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        with suppress(LockError, redis.RedisError):  # expired or taken over: nothing to release
            lock.release()
