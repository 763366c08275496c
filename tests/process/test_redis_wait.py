"""`serve` and `worker` wait for Redis instead of exiting: a worker started before its
Redis comes up when it does and outlives an outage past the retry budget; `serve` waits
out the retry window and then fails in one line naming the URL it used."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.checkpoints.connect import connect as open_client
from graphwright.checkpoints.saver_base import describe_client
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server, free_port, start_server
from graphwright.testing.service import running
from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: a worker and serve waiting out a Redis that is not there yet
pytestmark = pytest.mark.slow

ORDER = "订单 A1001 到哪了？"
PERSIST = ("--appendonly", "yes")  # the restarted server keeps the queue and its group


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _env(url: str, prefix: str) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "GRAPHWRIGHT_REDIS_RETRY_S": "1",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }


def test_a_worker_waits_for_redis_at_start_and_through_an_outage(
    tmp_path: Path,
    prefix: str,
) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    out = tmp_path / "worker.out"
    with out.open("wb") as sink:
        worker = subprocess.Popen(
            [sys.executable, "-m", "graphwright", "worker", "--name", "w"],
            env=_env(url, prefix),
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server: Server | None = None
    try:
        time.sleep(
            3
        )  # three retry budgets with nothing listening  # the outage itself: nothing to wait on
        assert worker.poll() is None, out.read_text()
        server = start_server(tmp_path / "redis", *PERSIST, port=port)
        wait_for(lambda: b"reading" in out.read_bytes(), 30, "the worker to start")
        server.stop()
        time.sleep(
            3
        )  # an outage three times the retry budget  # the outage itself: nothing to wait on
        assert worker.poll() is None, out.read_text()
        server = start_server(tmp_path / "redis", *PERSIST, port=port)
        settings = Settings(_env_file=None, REDIS_URL=url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
        with running(
            Orchestrator(settings=settings, model=OfflineChatModel()), worker=False
        ) as svc:
            sdk = get_sync_client(url=svc.url, api_key=None)
            tid = sdk.threads.create()["thread_id"]
            run = sdk.runs.create(tid, "agent", input={"goal": ORDER})
            wait_for(
                lambda: sdk.runs.get(tid, run["run_id"])["status"] == "success",
                60,
                "the worker to run the run after the outage",
            )
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        if server is not None:
            server.stop()


def test_serve_waits_out_the_window_then_names_the_sentinel_url(prefix: str) -> None:
    with socket.socket() as held:  # bound, not listening: refused, and no other test's server
        held.bind(("127.0.0.1", 0))  # can take the port meanwhile (one once answered HTML)
        url = f"redis+sentinel://127.0.0.1:{held.getsockname()[1]}/mymaster"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "graphwright", "serve", "--port", str(free_port())],
            env=_env(url, prefix),
            cwd=ROOT,
            capture_output=True,
            timeout=120,
        )
        took = time.monotonic() - started
    assert took >= 1  # the retry window
    # and no more than it: the imports (3 s) and the window (redis-py's default retries of
    # each sentinel's own client made one attempt 4 s, the whole 10 s)
    assert took < scaled(8), took
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert f"Redis at {url} is unreachable" in err and "Traceback" not in err
    assert "localhost:6379" not in err


def test_serve_pointed_at_a_server_that_is_not_redis_says_so_in_one_line(prefix: str) -> None:
    """A port taken by another server (here one answering HTML): the clear unreachable line,
    naming what answered, not a traceback."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        stop = threading.Event()

        def answer_html() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.sendall(b"<html>not redis</html>\r\n")

        threading.Thread(target=answer_html, daemon=True).start()
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}"
        try:
            done = subprocess.run(
                [sys.executable, "-m", "graphwright", "serve", "--port", str(free_port())],
                env=_env(url, prefix),
                cwd=ROOT,
                capture_output=True,
                timeout=120,
            )
        finally:
            stop.set()
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert f"Redis at {url}" in err and "is unreachable" in err and "InvalidResponse" in err, err
    assert "Traceback" not in err


def test_a_sentinel_client_is_described_by_its_sentinels() -> None:
    client = open_client("redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster")
    assert describe_client(client) == "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster"
