"""A worker cut from Redis by a network partition right after its run's `run_start`, before
the run's first checkpoint: the worker that takes the run over runs it with the user's
message (real sockets: a proxy that stops forwarding, as a partition does)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import pytest

from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.server.background.worker import Worker
from graphwright.server.records.run_store import TERMINAL, RunStore
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.testing.redis_servers import Server, free_port
from graphwright.testing.until import scaled, until

# Slow: a worker partitioned from Redis, its lock and entry waited out
pytestmark = pytest.mark.slow

FIRST = "What is 2 + 3?"
SECOND = "And what is 7 * 6?"


@dataclass
class Partition:
    """Forwards to Redis on `port` until a request holding `marker` has gone through once
    `armed`; from then on nothing passes either way (its reply included), as in a partition."""

    port: int
    marker: bytes
    listen: int = field(default_factory=free_port)
    armed: threading.Event = field(default_factory=threading.Event)
    cut: threading.Event = field(default_factory=threading.Event)
    severed: threading.Event = field(default_factory=threading.Event)
    sockets: list[socket.socket] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.listen}/0"

    def sever(self) -> None:
        """Close every connection and refuse new ones: the cut-off side's calls fail now,
        and it can stop."""
        self.severed.set()
        for sock in list(self.sockets):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def serve(self, server: socket.socket, stop: threading.Event) -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            if self.severed.is_set():
                client.close()
                continue
            self.sockets.append(client)
            if self.cut.is_set():
                continue  # accepted, never answered
            upstream = socket.create_connection(("127.0.0.1", self.port))
            self.sockets.append(upstream)
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, outbound: bool) -> None:
        with suppress(OSError):
            while (chunk := source.recv(1 << 16)) and not self.cut.is_set():
                sink.sendall(chunk)
                if outbound and self.armed.is_set() and self.marker in chunk:
                    self.cut.set()  # it reached Redis; nothing more does, its reply neither


@contextmanager
def partition(port: int, marker: bytes) -> Iterator[Partition]:
    proxy = Partition(port=port, marker=marker)
    server = socket.create_server(("127.0.0.1", proxy.listen))
    stop = threading.Event()
    loop = threading.Thread(target=proxy.serve, args=(server, stop), daemon=True)
    loop.start()
    try:
        yield proxy
    finally:
        stop.set()
        loop.join(timeout=scaled(5))
        server.close()
        proxy.sever()


@contextmanager
def working(worker: Worker, before_stop: Callable[[], None] = lambda: None) -> Iterator[Worker]:
    thread = threading.Thread(target=worker.run_forever, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        before_stop()
        worker.stop.set()
        thread.join(timeout=scaled(20))


def ended(store: RunStore, tid: str, run_id: str, timeout_s: float) -> dict[str, str]:
    def done() -> dict[str, str]:
        record = store.raw(tid, run_id)
        return record if record["status"] in TERMINAL else {}

    return until(done, f"run {run_id} to end", timeout_s)


def test_a_follow_up_cut_off_after_run_start_is_answered_by_the_worker_taking_it_over(
    settings: Settings, redis_server: Server
) -> None:
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    store = RunStore.of(orch)
    with partition(redis_server.port, b"run_start") as proxy:
        cut_settings = Settings(
            _env_file=None,
            REDIS_URL=proxy.url,  # type: ignore[call-arg]
            GRAPHWRIGHT_KEY_PREFIX=settings.key_prefix,
            GRAPHWRIGHT_LOCK_TTL_S="1.5",
            GRAPHWRIGHT_REDIS_RETRY_S="1",
        )
        cut_orch = Orchestrator(settings=cut_settings, model=OfflineChatModel())
        with working(
            Worker(cut_orch, name="cut-off", claim_idle_ms=1_000, block_ms=100, grace_s=1),
            before_stop=proxy.sever,
        ):
            tid = orch.create_thread("partitioned", {})
            body: dict[str, Any] = {"assistant_id": "agent", "multitask_strategy": "enqueue"}
            first = store.create(tid, RunCreate(**body, input={"goal": FIRST}), queue=True)
            assert ended(store, tid, first.run_id, 20)["status"] == "success"
            proxy.armed.set()
            second = store.create(tid, RunCreate(**body, input={"goal": SECOND}), queue=True)
            until(proxy.cut.is_set, "the worker to be cut off after run_start", 20)
            with working(Worker(orch, name="heir", claim_idle_ms=1_000, block_ms=100, grace_s=1)):
                record = ended(store, tid, second.run_id, 30)
    assert record["status"] == "success", record.get("error")
    values: dict[str, Any] = orch.snapshot(tid).values
    asked = [str(m.content) for m in values.get("messages", []) if m.type == "human"]
    assert any(SECOND in text for text in asked), asked  # not ended without the message
    orch.close()
