"""Start and stop real, private redis-server processes on free ports (single node or cluster).

Graphwright's own tests run on these, and so can a user's: `with redis_server() as server`
gives a throwaway server in a temporary directory, stopped afterwards.
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from graphwright.testing.until import scaled

_LOW, _HIGH = 10_000, 20_000  # picked ports; a cluster's bus ports sit 10,000 above them
_HELD_S = 3600.0  # how long a port handed out stays reserved for its taker


@functools.cache
def _candidates() -> tuple[int, ...]:
    """The ports to pick from, each with its cluster bus port below the ephemeral range.

    That range is the kernel's for outgoing connections' local ports and for binds to port 0.
    """
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        ephemeral = range(int(low), int(high) + 1)
    except (OSError, ValueError):
        ephemeral = range(32_768, 61_000)
    return tuple(
        p for p in range(_LOW, _HIGH) if p not in ephemeral and p + 10_000 not in ephemeral
    )


@functools.cache
def _claims() -> Path:
    folder = Path(tempfile.gettempdir()) / "graphwright-ports"
    folder.mkdir(exist_ok=True)
    return folder


def _reserve(port: int) -> bool:
    """Claim `port` among this machine's processes, unless another claimed it recently.

    A file made exclusively: parallel test processes picking at random must not pick the same one.
    """
    mark = _claims() / str(port)
    try:
        os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        try:
            if time.time() - mark.stat().st_mtime < _HELD_S:
                return False
            os.utime(mark)  # an old claim: its taker is long done with it
            return True
        except OSError:
            return False


def free_port() -> int:
    """A loopback TCP port nobody listens on, that no other picker or client socket will take.

    Chosen at random below the kernel's ephemeral range, and reserved for a while: a port from
    that range (what a bind to port 0 gives) may be taken by any outgoing connection before
    the caller's server binds it, and two parallel test processes picking at random could pick
    the same one. Falls back to the kernel's choice where the ephemeral range leaves nothing.
    """
    candidates = _candidates()
    rng = random.Random()
    for _ in range(500 if candidates else 0):
        port = rng.choice(candidates)
        if not _reserve(port):  # this process's own earlier picks included
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is valid and free too."""
    while True:
        port = free_port()
        if port >= 55535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def redis_binary() -> str:
    """The system redis-server (Debian's), or `GRAPHWRIGHT_TEST_REDIS_SERVER` (e.g. Valkey)."""
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p.rstrip("/") != venv_bin
    )
    found = os.environ.get("GRAPHWRIGHT_TEST_REDIS_SERVER") or shutil.which(
        "redis-server", path=path
    )
    if not found:
        raise RuntimeError("redis-server is not installed; run the README's test command")
    return found


@dataclass
class Server:
    """One running redis-server process and the port it listens on."""

    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=scaled(10))


def start_server(
    workdir: Path, *extra: str, binary: str | None = None, port: int | None = None
) -> Server:
    """A redis-server without persistence in `workdir`, returned once it answers PING."""
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            binary or redis_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + scaled(10)
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"redis-server did not start on port {port}") from None
            time.sleep(0.02)
    client.close()
    return Server(port, proc)


@contextmanager
def redis_server(*extra: str) -> Iterator[Server]:
    """A private redis-server in a temporary directory for the `with` block.

    `extra` are redis-server options, e.g. `"--appendonly", "yes"`.
    """
    with tempfile.TemporaryDirectory(prefix="graphwright-redis-") as workdir:
        server = start_server(Path(workdir), *extra)
        try:
            yield server
        finally:
            server.stop()


def start_cluster(workdir: Path, masters: int = 3, replicas: int = 0) -> list[Server]:
    """Start a Redis Cluster and wait until every node reports `cluster_state:ok`.

    Cluster-enabled servers, the 16384 slots split between the masters, each master given `replicas`
    replicas.

    The masters come first in the returned list, then the replicas.
    """
    servers: list[Server] = []
    try:
        for i in range(masters * (1 + replicas)):
            servers.append(
                start_server(
                    workdir / f"node{i}",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    "--appendonly",
                    "yes",
                    "--repl-diskless-sync-delay",
                    "0",
                    port=cluster_port(),
                )
            )
    except RuntimeError:
        for started in servers:
            started.stop()
        raise
    clients = [redis.Redis(port=s.port) for s in servers]
    step = 16384 // masters
    for i, client in enumerate(clients[:masters]):
        last = 16383 if i == masters - 1 else (i + 1) * step - 1
        _command(client, "CLUSTER", "ADDSLOTSRANGE", i * step, last)
    for client in clients[1:]:
        _command(client, "CLUSTER", "MEET", "127.0.0.1", servers[0].port)
    _wait_for(clients, len(servers))
    for i, client in enumerate(clients[masters:]):
        master_id = _command(clients[i % masters], "CLUSTER", "MYID")
        _command(client, "CLUSTER", "REPLICATE", master_id)
    if replicas:
        _wait_for(clients, len(servers), replicas=masters * replicas)
        _wait_for_sync(clients[masters:])
    for c in clients:
        c.close()
    return servers


def _command(client: redis.Redis, *args: Any) -> Any:
    """One raw command (CLUSTER, SENTINEL): redis-py leaves `execute_command` untyped."""
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


def _wait_for(clients: list[redis.Redis], nodes: int, replicas: int = 0) -> None:
    def ready(c: redis.Redis) -> bool:
        info = _command(c, "CLUSTER", "INFO").decode()
        lines = _command(c, "CLUSTER", "NODES").decode().strip().splitlines()
        linked = sum(1 for line in lines if "slave" in line.split()[2] and "connected" in line)
        return "cluster_state:ok" in info and len(lines) >= nodes and linked >= replicas

    deadline = time.monotonic() + scaled(30)
    while not all(ready(c) for c in clients):
        if time.monotonic() > deadline:
            raise RuntimeError("the test cluster did not reach cluster_state:ok")
        time.sleep(0.1)


def _wait_for_sync(replicas: list[redis.Redis]) -> None:
    """Until every replica holds its master's data.

    A replica that never synced is not allowed to take over when its master dies, so a failover test
    would wait forever.
    """
    deadline = time.monotonic() + scaled(30)
    while not all(r.info("replication").get("master_link_status") == "up" for r in replicas):
        if time.monotonic() > deadline:
            raise RuntimeError("the test cluster's replicas did not sync with their masters")
        time.sleep(0.05)


def start_sentinel(
    workdir: Path, master_port: int, service: str = "gwmaster"
) -> tuple[int, subprocess.Popen[bytes]]:
    """A Sentinel watching the master on `master_port`, failing it over a second after it dies."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / "sentinel.conf"
    conf.write_text(
        f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
        f"sentinel monitor {service} 127.0.0.1 {master_port} 1\n"
        f"sentinel down-after-milliseconds {service} 1000\n"
        f"sentinel failover-timeout {service} 3000\n"
    )
    proc = subprocess.Popen(
        [redis_binary(), str(conf), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + scaled(10)
    while True:
        try:
            if _command(client, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", service):
                break
        except redis.ConnectionError:
            pass  # not listening yet
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("redis sentinel did not start")
        time.sleep(0.05)
    client.close()
    return port, proc
