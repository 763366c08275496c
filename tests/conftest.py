"""Shared fixtures: a real redis-server per session, a key prefix per test, a network guard."""

from __future__ import annotations

import ipaddress
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from checkpoints.keys import Keys
from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server, start_cluster, start_server
from graphwright.testing.scripted_openai import ScriptedOpenAI
from tests.agent_rig import AgentRig

pytest_plugins = ["graphwright.testing.pytest_plugin"]  # the public kit's fixtures, as users load them

# tiktoken would download its encoding on first use; the tests have no network.
os.environ.setdefault("GRAPHWRIGHT_TOKENIZER", "approximate")


SLOW = {  # left out by ./scripts/test --quick; why each takes seconds, not milliseconds
    "test_packaging": "a fresh clone runs ./scripts/demo: a venv, an install, the README's path",
    "test_protocol_diff": "the reference Agent Server (langgraph dev) answers beside ours",
    "test_differential_resources": "the reference Agent Server answers every resource call",
    "test_node_sdk": "the reference's JS SDK in a Node process",
    "test_http_isolation": "the JS SDK in Node against two users' tokens",
    "test_remote_graph": "the reference's RemoteGraph against a served graph",
    "test_chaos": "fifty kill -9s of CLI and worker processes at drawn moments",
    "test_crash_resume": "kill -9 of a CLI process at named moments, then resume",
    "test_cron_workers": "three worker processes, one killed, racing for due crons",
    "test_worker_runs": "worker processes frozen and killed mid-run",
    "test_worker_crash": "worker processes killed inside a write and a model call",
    "test_worker_fencing": "a worker process frozen past its lock, another taking over",
    "test_worker_recovery": "worker processes restarted over a queue",
    "test_api_process_crash": "an API process killed mid-stream, a worker finishing its run",
    "test_fencing": "a second process frozen past its lock",
    "test_mcp_cli": "MCP servers in their own processes, the CLI killed inside a commit",
    "test_mcp_stdio": "MCP servers that crash, hang and flood their pipes",
    "test_failover": "Redis Cluster and Sentinel failing over under a run",
    "test_replica_wait": "a cluster with replicas acknowledging every write",
    "test_redis_blips": "Redis stopped for seconds under a run: the outage is the scenario",
    "test_embedded": "the embedded server shared by processes and restarted",
    "test_review_page": "headless Chromium answering gates on the review page",
    "test_browser_sdk": "headless Chromium running the JS SDK from another origin",
    "test_drawing": "headless Chromium rendering the HTML drawing",
    "test_projects": "langgraph.json projects served and answered in Chromium",
    "test_streaming": "the CLI in its own process printing a model stream as it comes",
    "test_startup": "fresh interpreters: what a user's shell loads",
    "test_fuzz": "every operation fuzzed against a running service",
    "test_calculator_properties": "property tests over random expression trees",
    "test_agent_compaction": "two hundred agent steps",
    "test_http_limits": "Redis stopped under a served run, every route answering 503",
    "test_resume_race": "twenty processes racing to approve one gate",
    "test_mcp_http": "an MCP server over HTTP restarted under a run",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: seconds per test; ./scripts/test --quick skips it")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("::")[0].removeprefix("tests/").removesuffix(".py") in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that opens a connection to a host that is not on this machine."""
    original = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        if isinstance(address, tuple) and self.family in (socket.AF_INET, socket.AF_INET6):
            host = str(address[0])
            if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
                raise AssertionError(f"test tried to reach non-loopback host {host}")
        return original(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)


CLUSTER = os.environ.get("GRAPHWRIGHT_TEST_TOPOLOGY") == "cluster"
"""Run the product suites on a 3-master cluster with a replica each instead of one server."""


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if CLUSTER:
        nodes = start_cluster(tmp_path_factory.mktemp("cluster"), masters=3, replicas=1)
        yield nodes[0]
        for node in nodes:
            node.stop()
        return
    server = start_server(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


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
        if CLUSTER else redis.Redis(port=redis_server.port)
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
    return Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
                    GRAPHWRIGHT_REDIS_CLUSTER=CLUSTER)


@pytest.fixture
def orch(settings: Settings) -> Iterator[Orchestrator]:
    """The Orchestrator on the test Redis with the offline model."""
    o = Orchestrator(settings=settings, model=OfflineChatModel())
    yield o
    o.close()
