"""A run's webhook is sent after the run has given its job slot back: a slow, failing
receiver holds no slot (a second run starts and ends while the first run's webhook is
still being retried), and the webhook is delivered once the receiver answers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from graphwright.offline import OfflineChatModel
from graphwright.orchestrator import Orchestrator
from graphwright.server.background.local_runs import LocalRuns
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs import webhook_sender
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.settings import Settings
from graphwright.testing.kit import until
from graphwright.testing.service import LOOPBACK
from graphwright.testing.until import scaled

SLOW_S = 0.3  # how long the receiver takes to answer, each time


class Receiver:
    """Answers 500 (slowly) until `open` is set, then 200; keeps what it was sent."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.tries: list[float] = []
        self.delivered: list[dict[str, Any]] = []
        receiver = self

        class Hook(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                ok = receiver.open.is_set()  # as the try begins: one under way still fails
                receiver.tries.append(time.monotonic())
                time.sleep(SLOW_S)  # a slow receiver: the old sender waited on each answer
                if ok:
                    receiver.delivered.append(body)
                self.send_response(200 if ok else 500)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver()
    threading.Thread(target=got.server.serve_forever, daemon=True).start()
    try:
        yield got
    finally:
        got.server.shutdown()
        got.server.server_close()


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sender that keeps trying (quickly) for as long as the test may need."""
    policy = webhook_sender.Policy(attempts=10_000, first_wait_s=0.05, max_wait_s=0.2)
    monkeypatch.setattr(webhook_sender.SENDER, "policy", policy)


def test_a_failing_webhook_holds_no_job_slot_and_is_delivered(
    redis_url: str, prefix: str, receiver: Receiver, patient: None
) -> None:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_WEBHOOK_ALLOW=LOOPBACK,
    )
    with Orchestrator(settings=settings, model=OfflineChatModel()) as orch:
        store = RunStore(orch.client, orch.keys)
        local = LocalRuns(orch, store, limit=1)  # one job slot

        def started(thread: str, webhook: str | None = None) -> str:
            orch.create_thread(thread)
            body = RunCreate(
                assistant_id="agent", input={"goal": "What is 2 + 2?"}, webhook=webhook
            )
            run = store.create(thread, body, queue=False, lease_s=store.claim_window_s)
            local.submit(thread, run.run_id)
            return run.run_id

        first = started("hooked", receiver.url)
        until(lambda: len(receiver.tries) >= 2, "the webhook to fail twice", scaled(30))
        second = started("next")
        until(
            lambda: store.get("next", second).status == "success",
            "the second run to take the slot and end",
            scaled(30),
        )
        assert not receiver.delivered  # still failing: the first run's webhook is retrying
        tried = len(receiver.tries)
        receiver.open.set()
        until(lambda: receiver.delivered, "the webhook to be delivered", scaled(30))
        assert len(receiver.tries) > tried  # tried again after the second run had ended
        (call,) = receiver.delivered
        assert call["run_id"] == first and call["status"] == "success"
