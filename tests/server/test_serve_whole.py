"""`graphwright serve` alone is a whole server, as `langgraph dev` is: with no worker
process it runs background, delayed and cron runs itself, never more than `--jobs` at once
(waits and streams included); `serve --queue` with no live worker says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled, until, wait_exit
from tests.support.paths import ROOT

# Slow: serve processes running background, delayed and cron runs alone
pytestmark = pytest.mark.slow

GRAPH = '''
import os

import redis
from typing import TypedDict
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    """The run's tag."""

    tag: str


def held(state: State) -> dict[str, str]:
    """Counts the runs inside at once; waits (about a minute at most) while the test holds
    them."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    prefix = os.environ["GRAPHWRIGHT_KEY_PREFIX"]
    inside = client.incr(f"{prefix}:t:inside")
    client.eval("if tonumber(redis.call('GET', KEYS[1]) or 0) < tonumber(ARGV[1]) then "
                "redis.call('SET', KEYS[1], ARGV[1]) end", 1, f"{prefix}:t:max", inside)
    client.incr(f"{prefix}:t:started")
    for _ in range(60):  # short blocking reads: the test's Redis URL sets a socket timeout
        if not client.exists(f"{prefix}:t:hold") or client.blpop([f"{prefix}:t:go"], timeout=1):
            break
    client.decr(f"{prefix}:t:inside")
    return {"tag": state["tag"] + "!"}


flow = StateGraph(State)
flow.add_node("held", held)
flow.add_edge(START, "held")
flow.add_edge("held", END)
graph = flow.compile()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "graph.py").write_text(GRAPH)
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"held": "./graph.py:graph"}}))
    return tmp_path


@pytest.fixture
def serve(
    project: Path, redis_url: str, prefix: str
) -> Iterator[Callable[..., tuple[str, subprocess.Popen[str]]]]:
    started: list[subprocess.Popen[str]] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPHWRIGHT_"))}
    env.update(REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix, PYTHONPATH=str(ROOT))

    def start(*flags: str) -> tuple[str, subprocess.Popen[str]]:
        port = free_port()
        api = subprocess.Popen(
            [sys.executable, "-m", "graphwright", "serve", "--port", str(port), *flags],
            env=env,
            cwd=project,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(api)
        url = f"http://127.0.0.1:{port}"
        until(lambda: api.poll() is not None or _answers(url), "the API to listen")
        assert api.poll() is None, api.stderr.read() if api.stderr else ""
        return url, api

    yield start
    for api in started:
        api.terminate()
        wait_exit(api, "the API to stop", 15)


def test_background_delayed_and_cron_runs_end_with_no_worker_process(
    serve: Callable[..., tuple[str, subprocess.Popen[str]]],
) -> None:
    url, _ = serve()
    sdk = get_sync_client(url=url)
    thread = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(thread, "held", input={"tag": "bg"})
    assert sdk.runs.join(thread, run["run_id"]) == {"tag": "bg!"}  # it waited for a worker
    later = sdk.threads.create()["thread_id"]
    delayed = sdk.runs.create(later, "held", input={"tag": "later"}, after_seconds=1)
    assert sdk.runs.join(later, delayed["run_id"]) == {"tag": "later!"}
    cron_thread = sdk.threads.create()["thread_id"]
    cron = sdk.crons.create_for_thread(
        cron_thread, "held", schedule="* * * * * *", input={"tag": "cron"}
    )
    until(lambda: sdk.runs.list(cron_thread), "the cron to fire", 30)
    sdk.crons.delete(cron["cron_id"])
    first = sdk.runs.list(cron_thread)[-1]
    assert sdk.runs.join(cron_thread, first["run_id"]) == {"tag": "cron!"}
    assert httpx.get(f"{url}/info").json()["graphwright"]["workers"] >= 1  # its own


def test_jobs_bounds_what_serve_runs_at_once(
    serve: Callable[..., tuple[str, subprocess.Popen[str]]], client: redis.Redis, prefix: str
) -> None:
    client.set(f"{prefix}:t:hold", 1)
    url, _ = serve("--jobs", "2")
    sdk = get_sync_client(url=url, timeout=scaled(120))
    threads = [sdk.threads.create()["thread_id"] for _ in range(6)]
    for thread in threads[:3]:  # background runs
        sdk.runs.create(thread, "held", input={"tag": "bg"})
    waits = [
        threading.Thread(
            target=sdk.runs.wait, args=(t, "held"), kwargs={"input": {"tag": "wait"}}, daemon=True
        )
        for t in threads[3:]
    ]
    for waiting in waits:
        waiting.start()
    until(lambda: int(client.get(f"{prefix}:t:started") or 0) >= 2, "two runs to start")
    with pytest.raises(AssertionError):  # a third would start now if nothing held it back
        until(lambda: int(client.get(f"{prefix}:t:started") or 0) > 2, "a third run", 3)
    for _ in range(6):
        client.rpush(f"{prefix}:t:go", 1)
    until(lambda: int(client.get(f"{prefix}:t:started") or 0) == 6, "every run to start", 60)
    for waiting in waits:
        waiting.join(timeout=scaled(60))
    for thread in threads:
        (run,) = sdk.runs.list(thread)
        assert sdk.runs.join(thread, run["run_id"])["tag"] in ("bg!", "wait!")
    assert int(client.get(f"{prefix}:t:max") or 0) == 2  # issue 35 saw 20 at once under 2


def test_serve_queue_with_no_worker_says_so(
    serve: Callable[..., tuple[str, subprocess.Popen[str]]],
) -> None:
    url, api = serve("--queue")
    info = httpx.get(f"{url}/info").json()["graphwright"]
    assert info["workers"] == 0 and info["runs_here"] is False
    assert "no graphwright worker" in info["warning"]
    api.terminate()
    wait_exit(api, "the API to stop", 15)
    assert api.stderr is not None and "no graphwright worker" in api.stderr.read()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200
    except httpx.HTTPError:
        return False
