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
from tests.agent_rig import AgentRig

pytest_plugins = [
    "graphwright.testing.pytest_plugin"
]  # the public kit's fixtures, as users load them


SLOW = {  # left out by ./scripts/test --quick; why each takes seconds, not milliseconds
    "test_without_langchain": "serve and invoke in processes that cannot import langchain",
    "test_serve_whole": "serve processes running background, delayed and cron runs alone",
    "test_project_auth_diff": "the reference Agent Server beside serve, both under auth.path",
    "test_packaging": "a fresh clone runs ./scripts/demo: a venv, an install, the README's path",
    "test_first_contact": (
        "the wheel built and installed in a venv of its own; serve, workers and the reference "
        "started from it"
    ),
    "test_protocol_diff": "the reference Agent Server (langgraph dev) answers beside ours",
    "test_differential_resources": "the reference Agent Server answers every resource call",
    "test_differential_handler_values": "the reference Agent Server shows its handlers values",
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
    "test_browser_foreign_page": "headless Chromium: a foreign and a rebinding page attacking",
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
    "test_run_owners": "API processes killed around runs they created, workers sweeping them",
    "test_worker_jobs": "a worker with ten runs SIGKILLed, another SIGTERMed in its grace period",
    "test_redis_wait": "a worker and serve waiting out a Redis that is not there yet",
    "test_join_outage": "Redis stopped, or a cluster master killed, under a waiting join",
    "test_takeover_partition": "a worker partitioned from Redis, its lock and entry waited out",
    "test_browser_use_stream": "headless Chromium rendering a useStream page from another origin",
    "test_docs_examples": "every example of the docs as a reader runs it: CLI processes, a server",
    "test_http_waits": "runs outliving a client's read timeout on purpose: seconds each",
    "test_real_model": "a real model (SmolLM2-135M) on llama.cpp's server answering on the CPU",
}


# The thirty slowest tests of the main pass (`--durations=30`, printed by ./scripts/test;
# a fresh clone on a quiet 2-core machine, this stop), each with why it takes what it
# takes. None waits on a fixed sleep: the time is a process started, killed or frozen, a
# window waited out on purpose, or many generated cases. tests/test_suite_table.py checks
# each still exists.
SLOWEST = {
    "test_packaging::test_a_new_user_runs_the_readme_commands_in_a_fresh_clone": (
        "a fresh clone's ./scripts/demo: creating the venv and installing is what it proves"
    ),
    "test_chaos::test_fifty_kills_through_the_cli_and_workers_recover_exactly_once": (
        "fifty SIGKILLs at drawn moments, each followed by a recovery process"
    ),
    (
        "test_api_process_crash::"
        "test_an_api_killed_after_the_effect_leaves_one_effect_and_a_working_thread"
        "[inside the write, after its effect]"
    ): (
        "an API process killed inside a write; a worker takes the run over after its lease, a "
        "reviewer settles the unknown outcome, a second serve runs the thread's next run"
    ),
    "test_chaos::test_kills_of_the_api_process_and_of_a_cron_worker_recover_exactly_once": (
        "sixteen SIGKILLs of an API process or of a cron's worker, each followed by a recovery"
    ),
    (
        "test_api_process_crash::"
        "test_an_api_killed_after_the_effect_leaves_one_effect_and_a_working_thread"
        "[after the write was recorded]"
    ): ("as above with the write recorded: three processes, two of them API servers"),
    "test_calculator_properties::test_random_expression_trees_match_python_arithmetic": (
        "3,000 random expression trees, each evaluated twice: the count finds the rare precedence "
        "and overflow cases"
    ),
    "test_cron_workers::test_three_workers_run_each_due_cron_run_once_though_one_is_killed": (
        "a cron due every second watched over several slots on three workers, one killed"
    ),
    (
        "test_crash_resume::"
        "test_killed_inside_an_ungated_write_stops_at_the_gate_with_its_key[after_effect]"
    ): ("a CLI process killed after its effect, then a resume in a new process"),
    (
        "test_run_owners::"
        "test_an_api_killed_during_after_seconds_leaves_the_run_to_a_worker_once[wait]"
    ): ("an API process killed during the run's after_seconds; the worker runs it after the delay"),
    "test_api_process_crash::test_a_run_in_a_killed_api_process_is_finished_by_a_worker_once": (
        "an API process killed mid-run; a worker takes the run over once its lease runs out"
    ),
    "test_worker_fencing::test_a_worker_frozen_past_its_lock_is_fenced_out_after_a_takeover": (
        "a SIGSTOPped worker waited past its lock's TTL, another worker taking over, then the "
        "frozen one woken and seen to write nothing"
    ),
    (
        "test_crash_resume::"
        "test_a_retry_killed_after_its_effect_is_not_run_a_third_time_by_a_plain_resume"
    ): ("three CLI processes: a run and its retry each killed after the effect, then a resume"),
    "test_http_limits::test_redis_stopping_mid_run_gives_503_with_retry_after_on_every_route": (
        "Redis stopped under a served run, then each of 44 routes asked: each waits out its 0.1 s "
        "retry budget before its 503"
    ),
    "test_fuzz::test_fuzzing_under_custom_auth_with_stateful_links_finds_no_server_error": (
        "schemathesis walks every operation and its links as a custom-Auth user"
    ),
    (
        "test_worker_fencing::"
        "test_a_worker_frozen_while_it_remembers_stores_nothing_after_a_takeover"
    ): (
        "a worker frozen inside its remember call past its lock's TTL, another taking over, then "
        "the frozen one woken"
    ),
    "test_fuzz::test_fuzzing_every_operation_finds_no_server_error_and_no_schema_violation": (
        "schemathesis over every operation of /openapi.json against a running service"
    ),
    (
        "test_worker_crash::"
        "test_a_worker_killed_mid_model_call_is_finished_by_another_with_its_write_once"
    ): ("a worker process killed while the model answers, another claiming after the window"),
    (
        "test_worker_jobs::"
        "test_a_stopped_worker_hands_back_its_runs_within_the_grace_period_and_loses_none"
    ): ("the grace period is waited out with runs still going: the hand-back is the point"),
    "test_worker_crash::test_a_worker_killed_inside_a_write_is_claimed_and_left_to_a_reviewer": (
        "a worker process killed inside a write, another claiming it after the claim window"
    ),
    "test_redis_blips::test_a_run_rides_through_a_redis_restart[10.0]": (
        "a 10 s Redis outage under a run: the outage's length is the scenario"
    ),
    "test_failover::test_a_run_rides_through_a_cluster_master_failing_over[kill]": (
        "a cluster master killed under a run and its replica promoted"
    ),
    "test_fencing::test_a_frozen_holder_is_fenced_out_after_a_takeover": (
        "a second process frozen past the lock's TTL while another takes the thread"
    ),
    (
        "test_worker_jobs::"
        "test_a_worker_killed_with_ten_runs_in_flight_has_each_finished_once_by_another"
    ): (
        "ten runs in flight in a worker process that is killed; another claims each once its claim"
        " window (1 s) has passed and finishes it"
    ),
    (
        "test_worker_runs::"
        "test_a_worker_killed_mid_tool_mid_stream_is_finished_once_and_the_stream_resumes"
    ): ("a worker process killed inside a tool, a second one claiming after the claim window"),
    "test_worker_runs::test_a_worker_killed_mid_checkpoint_is_finished_by_another_once": (
        "a worker SIGKILLed inside a checkpoint write; another claims the run past the claim window"
    ),
    "test_agent_compaction::test_two_hundred_steps_keep_every_request_and_the_record_bounded": (
        "two hundred agent steps through the model client, compacting as it goes"
    ),
    "test_redis_wait::test_a_worker_waits_for_redis_at_start_and_through_an_outage": (
        "a worker started before its Redis, then an outage: the waits are the scenario"
    ),
    "test_worker_jobs::test_a_stopped_worker_finishes_the_runs_that_end_within_the_grace_period": (
        "a worker SIGTERMed with runs in flight, finishing them inside its grace period"
    ),
    "test_worker_runs::test_a_frozen_worker_is_not_robbed_and_its_run_ends_once": (
        "a worker frozen (SIGSTOP) past a heartbeat, then thawed to finish its own run"
    ),
    "test_redis_blips::test_an_outage_past_the_retry_budget_fails_clearly_and_resume_completes": (
        "Redis stopped past the retry budget, which is waited out, then a resume"
    ),
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: seconds per test; ./scripts/test --quick skips it")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("::")[0].removeprefix("tests/").removesuffix(".py") in SLOW:
            item.add_marker(pytest.mark.slow)


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
