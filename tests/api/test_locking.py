"""The fenced thread lock: tokens, takeover of provably dead holders only, loss detection."""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

import pytest
import redis

from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.keys import Keys
from graphwright.lock_owner import _start_time, identity
from graphwright.locking import ThreadBusyError, thread_lock
from graphwright.testing.until import scaled


@pytest.fixture
def keys(prefix: str) -> Keys:
    return Keys(prefix=prefix)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_every_acquisition_takes_a_newer_fencing_token(client: redis.Redis, keys: Keys) -> None:
    with thread_lock(client, keys, "t") as first:
        busy = thread_lock(client, keys, "t")
        with pytest.raises(ThreadBusyError, match="already running"):
            busy.__enter__()
    with thread_lock(client, keys, "t") as second:
        assert second.fence > first.fence
        assert json.loads(client.get(keys.lock("t")) or "{}")["fence"] == second.fence


@pytest.mark.parametrize(
    ("change", "taken"),
    [
        ({}, True),  # same machine, its process gone: taken over at once
        ({"boot": "another-boot"}, False),  # another machine or boot: wait for the expiry
        ({"pidns": "pid:[1]"}, False),  # another container sharing the hostname
        ({"start": None}, False),  # no way to tell
    ],
)
def test_a_dead_holder_is_taken_over_only_when_provably_dead(
    client: redis.Redis, keys: Keys, change: dict[str, object], taken: bool
) -> None:
    holder = {**identity(), "pid": dead_pid(), "start": "1", "id": "old", "fence": 1, **change}
    client.set(keys.lock("t"), json.dumps(holder), px=30_000)
    if taken:
        with thread_lock(client, keys, "t") as lock:
            assert lock.fence >= 1
    else:
        with pytest.raises(ThreadBusyError), thread_lock(client, keys, "t"):
            pass


def test_a_live_holder_on_this_machine_is_not_taken_over(client: redis.Redis, keys: Keys) -> None:
    holder = subprocess.Popen(["sleep", "60"])
    try:
        owner = {
            **identity(),
            "pid": holder.pid,
            "start": _start_time(holder.pid),
            "id": "it",
            "fence": 1,
        }
        client.set(keys.lock("t"), json.dumps(owner), px=30_000)
        with pytest.raises(ThreadBusyError), thread_lock(client, keys, "t"):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_this_process_left_behind_is_taken_over(client: redis.Redis, keys: Keys) -> None:
    """A run whose release failed (Redis was away) must not block this process's next run."""
    client.set(keys.lock("t"), json.dumps({**identity(), "id": "left", "fence": 1}), px=30_000)
    with thread_lock(client, keys, "t") as lock:
        assert lock.fence == 1  # the counter is its own key: the takeover increments it
        with pytest.raises(ThreadBusyError), thread_lock(client, keys, "t"):
            pass  # while this process holds it, it is held


def test_a_lock_taken_from_under_a_run_is_noticed(client: redis.Redis, keys: Keys) -> None:
    with thread_lock(client, keys, "t", ttl_s=0.3) as lock:
        client.set(keys.lock("t"), "someone else")
        assert lock.lost.wait(scaled(5))
        with pytest.raises(LockLostError, match="lost"):
            lock.check()
    assert client.get(keys.lock("t")) == b"someone else"  # not released: it was not ours


class PausingAfterAcquire:
    """A client that stops right after the lock is taken in Redis, before the taker has
    returned: the window in which another run of this process may try the same thread."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.acquired = threading.Event()
        self.go = threading.Event()

    def eval(self, script: str, *args: Any) -> Any:
        got = self.client.eval(script, *args)
        if "INCR" in script and got is not None and not self.acquired.is_set():
            self.acquired.set()
            assert self.go.wait(scaled(10))
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_a_lock_another_run_of_this_process_is_taking_is_not_taken_over(
    client: redis.Redis, keys: Keys
) -> None:
    """Two runs of one process race for a thread (a worker's jobs): the one that took the
    lock in Redis and has not yet returned holds it; the other is busy, never its taker."""
    pausing = PausingAfterAcquire(client)
    taken: list[int] = []

    def first() -> None:
        with thread_lock(pausing, keys, "t") as lock:  # type: ignore[arg-type]  # a proxy
            taken.append(lock.fence)

    taker = threading.Thread(target=first)
    taker.start()
    try:
        assert pausing.acquired.wait(scaled(10)), "the first run never took the lock"
        with pytest.raises(ThreadBusyError), thread_lock(client, keys, "t"):
            pass
    finally:
        pausing.go.set()
        taker.join(scaled(10))
    assert taken == [1]
    with thread_lock(client, keys, "t") as lock:  # given back: the next run takes it
        assert lock.fence == 2
