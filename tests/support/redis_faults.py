"""Redis servers to fail on purpose: one restarted on its port with its data kept, and
the cluster master that serves a key, to kill."""

from __future__ import annotations

import time
from pathlib import Path

import redis

from graphwright.testing.redis_servers import Server, free_port, start_server

AOF = ("--appendonly", "yes", "--appendfsync", "always")


class Restartable:
    """A redis-server with AOF on that can be stopped and started again on its port."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self.port = workdir, free_port()
        self.server: Server = start_server(workdir, *AOF, port=self.port)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def outage(self, seconds: float) -> float:
        """Stop the server for `seconds`; returns how long it was really down (a busy
        machine starts it again late)."""
        started = time.monotonic()
        self.down()
        time.sleep(seconds)  # the outage itself is the scenario
        self.up()
        return time.monotonic() - started

    def down(self) -> None:
        self.server.stop()  # a clean shutdown: the AOF is flushed

    def up(self) -> None:
        self.server = start_server(self.workdir, *AOF, port=self.port)


def owner_of(servers: list[Server], key: str) -> Server:
    """The master serving `key`'s slot, as the cluster itself reports it."""
    probe = redis.Redis(port=servers[0].port)
    slot = int(probe.execute_command("CLUSTER", "KEYSLOT", key))
    for start, end, master, *_ in probe.execute_command("CLUSTER", "SLOTS"):
        if int(start) <= slot <= int(end):
            probe.close()
            return next(s for s in servers if s.port == int(master[1]))
    raise AssertionError(f"no master serves slot {slot}")
