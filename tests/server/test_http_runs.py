"""Run features of the HTTP service beyond the reference comparison: cancelling a running
run (interrupt, rollback) reaches the executor, also inside a long step, `on_disconnect`
cancels, webhooks are called, stateless runs leave no thread behind."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright.testing.fixed_openai import serving
from graphwright.testing.kit import until
from graphwright.testing.redis_servers import Server
from graphwright.testing.service import Service
from graphwright.testing.until import scaled
from tests.support.protocol_graphs import CHAT_URL_ENV
from tests.support.protocol_servers import graphwright_server

STEPS: dict[str, Any] = {"steps": []}


@pytest.fixture(scope="module")
def svc(redis_server: Server) -> Iterator[Service]:
    with serving() as chat:
        os.environ[CHAT_URL_ENV] = chat
        with graphwright_server(redis_server.url) as service:
            yield service


def ticks(sdk: Any, tid: str) -> int:
    return len(sdk.threads.get_state(tid)["values"].get("steps") or [])


@pytest.mark.parametrize("background", [True, False], ids=["worker", "api-process"])
def test_cancel_with_wait_interrupts_a_running_run(svc: Service, background: bool) -> None:
    sdk = get_sync_client(url=svc.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    if background:
        run_id = sdk.runs.create(tid, "slow", input=STEPS)["run_id"]
    else:
        with httpx.stream(
            "POST",
            f"{svc.url}/threads/{tid}/runs/stream",
            json={"assistant_id": "slow", "input": STEPS, "on_disconnect": "continue"},
            timeout=scaled(30),
        ) as response:
            run_id = response.headers["content-location"].rsplit("/", 1)[-1]  # and hang up
    until(
        lambda: sdk.runs.get(tid, run_id)["status"] == "running" and ticks(sdk, tid) >= 2, "ticks"
    )
    sdk.runs.cancel(tid, run_id, wait=True, action="interrupt")
    assert sdk.runs.get(tid, run_id)["status"] == "interrupted"
    stopped = ticks(sdk, tid)
    assert 2 <= stopped < 100
    assert sdk.threads.get(tid)["status"] == "interrupted"  # as the reference marks it


def test_cancel_with_rollback_deletes_the_run_and_its_state(svc: Service) -> None:
    sdk = get_sync_client(url=svc.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    sdk.runs.wait(tid, "subgraph", input=STEPS)
    before = sdk.threads.get_state(tid)["values"]
    run_id = sdk.runs.create(tid, "slow", input=STEPS, multitask_strategy="enqueue")["run_id"]
    until(lambda: ticks(sdk, tid) > len(before["steps"]) + 1, "the slow run to tick")
    sdk.runs.cancel(tid, run_id, wait=True, action="rollback")
    with pytest.raises(httpx.HTTPStatusError) as caught:
        sdk.runs.get(tid, run_id)
    assert caught.value.response.status_code == 404
    assert sdk.threads.get_state(tid)["values"] == before


def test_a_client_that_disconnects_cancels_a_run_with_on_disconnect_cancel(svc: Service) -> None:
    sdk = get_sync_client(url=svc.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    body = {
        "assistant_id": "slow",
        "input": STEPS,
        "stream_mode": "updates",
        "on_disconnect": "cancel",
    }
    with httpx.stream(
        "POST", f"{svc.url}/threads/{tid}/runs/stream", json=body, timeout=scaled(30)
    ) as response:
        run_id = response.headers["content-location"].rsplit("/", 1)[-1]
        for line in response.iter_lines():
            if line.startswith("event: updates"):
                break  # and hang up
    until(lambda: sdk.runs.get(tid, run_id)["status"] == "interrupted", "the run to be cancelled")
    assert ticks(sdk, tid) < 100


def test_a_webhook_gets_the_finished_run(svc: Service) -> None:
    received: list[dict[str, Any]] = []
    got = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            return

        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(200)
            self.end_headers()
            got.set()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]
        sdk.runs.wait(
            tid,
            "subgraph",
            input=STEPS,
            webhook=f"http://127.0.0.1:{server.server_address[1]}/hook",
        )
        assert got.wait(scaled(30))
    finally:
        server.shutdown()
        server.server_close()
    (call,) = received
    assert call["thread_id"] == tid and call["status"] == "success"
    assert json.loads(call["values"])["steps"][-1] == "last"


def test_a_stateless_run_leaves_no_thread_unless_kept(svc: Service) -> None:
    sdk = get_sync_client(url=svc.url, api_key=None)
    run = sdk.runs.create(None, "subgraph", input=STEPS)
    assert sdk.runs.join(run["thread_id"], run["run_id"])["steps"][-1] == "last"
    with pytest.raises(httpx.HTTPStatusError):
        sdk.threads.get(run["thread_id"])
    kept = sdk.runs.create(None, "subgraph", input=STEPS, on_completion="keep")
    sdk.runs.join(kept["thread_id"], kept["run_id"])
    assert sdk.threads.get(kept["thread_id"])["status"] == "idle"


def test_a_failing_run_sends_an_error_event_and_wait_returns_error(svc: Service) -> None:
    sdk = get_sync_client(url=svc.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "raising", input=STEPS, stream_mode=["updates"]))
    assert parts[-1].event == "error" and parts[-1].data == {
        "error": "ValueError",
        "message": "boom happened",
    }
    body = httpx.post(
        f"{svc.url}/threads/{tid}/runs/wait", json={"assistant_id": "raising", "input": STEPS}
    ).json()
    assert body == {"__error__": {"error": "ValueError", "message": "boom happened"}}


@pytest.mark.parametrize("background", [True, False], ids=["worker", "api-process"])
def test_a_run_that_answers_has_given_its_thread_back(svc: Service, background: bool) -> None:
    """`runs.wait` and `join` answer once the run's lock is gone (the end and the release
    are one step): a next run, or the Python API, never meets the finished run's lock."""
    sdk = get_sync_client(url=svc.url, api_key=None)
    keys = svc.orch.keys
    held = []
    for _ in range(10):
        tid = sdk.threads.create()["thread_id"]
        if background:
            run = sdk.runs.create(tid, "subgraph", input=STEPS)
            sdk.runs.join(tid, run["run_id"])
        else:
            sdk.runs.wait(tid, "subgraph", input=STEPS)
        held.append(svc.orch.client.exists(keys.lock(tid)))
    assert not any(held), f"{sum(held)} of 10 threads still locked when their run answered"
