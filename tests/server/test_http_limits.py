"""Limits and outages of the HTTP service: 413 for big bodies, 429 past the run rate of one
identity, and 503 with Retry-After when Redis stops, even in the middle of a run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import start_server
from graphwright.testing.service import running
from graphwright.testing.until import scaled
from tests.support import auth_owner
from tests.support.endpoints import ENDPOINTS

# Slow: Redis stopped under a served run, every route answering 503
pytestmark = pytest.mark.slow

KEY = "limits-key-51c2"
RUN = {"assistant_id": "agent", "input": {"goal": "x"}}
MORE_RUN_ROUTES = [
    ("POST", "/runs", RUN),
    ("POST", "/runs/wait", RUN),
    ("POST", "/runs/stream", RUN),
    ("POST", "/runs/cancel", {"status": "all"}),
    ("DELETE", "/threads/t1/runs/r1", None),
    ("GET", "/threads/t1/runs/r1/stream", None),
    ("GET", "/threads/t1/stream", None),
]
CRON = {"assistant_id": "agent", "schedule": "0 0 1 1 *"}
STORE_CRON_REVIEW_ROUTES = [
    ("PUT", "/store/items", {"namespace": ["a"], "key": "k", "value": {}}),
    ("GET", "/store/items?namespace=a&key=k", None),
    ("DELETE", "/store/items", {"namespace": ["a"], "key": "k"}),
    ("POST", "/store/items/search", {}),
    ("POST", "/store/namespaces", {}),
    ("POST", "/runs/crons", CRON),
    ("POST", "/threads/t1/runs/crons", CRON),
    ("POST", "/runs/crons/search", {}),
    ("POST", "/runs/crons/count", {}),
    ("GET", "/runs/crons/c1", None),
    ("PATCH", "/runs/crons/c1", {"enabled": False}),
    ("DELETE", "/runs/crons/c1", None),
    ("GET", "/review", None),
    ("GET", "/review/t1", None),
    ("POST", "/review/t1/answer", {"resume": None}),
]


def tuned(settings: Settings, **env: object) -> Settings:
    return Settings(
        _env_file=None,
        REDIS_URL=settings.redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=settings.key_prefix,
        **env,
    )


def test_a_body_over_the_cap_is_413_before_any_route_runs(settings: Settings) -> None:
    orch = Orchestrator(
        settings=tuned(settings, GRAPHWRIGHT_MAX_BODY_BYTES=2_000), model=OfflineChatModel()
    )
    with (
        running(orch, api_key=KEY, worker=False) as svc,
        httpx.Client(base_url=svc.url, headers={"x-api-key": KEY}) as http,
    ):
        big = {"metadata": {"note": "x" * 5_000}}
        assert http.post("/threads", json=big).status_code == 413
        chunked = http.post(
            "/threads",
            content=iter([b'{"metadata": {"note": "', b"x" * 5_000, b'"}}']),
            headers={"content-type": "application/json"},
        )
        assert chunked.status_code == 413 and "GRAPHWRIGHT_MAX_BODY_BYTES" in chunked.text
        assert http.post("/threads/search", json={}).json() == []  # nothing was created
        assert http.post("/threads", json={"metadata": {"note": "small"}}).status_code == 200


def test_run_creation_past_the_rate_is_429_per_identity(settings: Settings) -> None:
    orch = Orchestrator(
        settings=tuned(settings, GRAPHWRIGHT_RUN_RATE=1, GRAPHWRIGHT_RUN_BURST=2),
        model=OfflineChatModel(),
    )
    with running(orch, auth=auth_owner.auth, worker=False) as svc:

        def client(token: str) -> httpx.Client:
            return httpx.Client(base_url=svc.url, headers={"Authorization": f"Bearer {token}"})

        with client("token-alice") as alice, client("token-bob") as bob:
            tid = alice.post("/threads", json={}).json()["thread_id"]
            run = {
                "assistant_id": "agent",
                "input": {"goal": "hi"},
                "multitask_strategy": "enqueue",
            }
            codes = [alice.post(f"/threads/{tid}/runs", json=run).status_code for _ in range(3)]
            assert codes == [200, 200, 429]  # the bucket holds two
            refused = alice.post(f"/threads/{tid}/runs/wait", json=run)
            assert refused.status_code == 429
            assert int(refused.headers["Retry-After"]) >= 1
            assert alice.get(f"/threads/{tid}").status_code == 200  # reads are not limited
            bobs = bob.post("/threads", json={}).json()["thread_id"]
            assert bob.post(f"/threads/{bobs}/runs", json=run).status_code == 200


def test_redis_stopping_mid_run_gives_503_with_retry_after_on_every_route(
    tmp_path: Path, prefix: str
) -> None:
    server = start_server(tmp_path / "redis")
    settings = Settings(
        _env_file=None,
        REDIS_URL=server.url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register_all",
        GRAPHWRIGHT_REDIS_RETRY_S=0.1,  # past the retry budget: the outage shows
        # the wait answers with a status, not a keep-alive body (whose outage,
        # after its status line, cuts the body: the SDK rejoins)
        GRAPHWRIGHT_KEEPALIVE_S=3600,
    )
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    watcher = redis.Redis.from_url(server.url)
    try:
        with running(orch, api_key=KEY, worker=False) as svc:
            sdk = get_sync_client(url=svc.url, api_key=KEY)
            tid = sdk.threads.create()["thread_id"]
            answer: dict[str, httpx.Response] = {}

            def wait() -> None:
                with httpx.Client(
                    base_url=svc.url, headers={"x-api-key": KEY}, timeout=scaled(60)
                ) as http:
                    answer["r"] = http.post(
                        f"/threads/{tid}/runs/wait",
                        json={"assistant_id": "slow_answer", "input": {"goal": "What is 2+3?"}},
                    )

            waiting = threading.Thread(target=wait)
            waiting.start()
            while watcher.get(f"{prefix}:slow:answering") != b"1":  # the run is in its last step
                time.sleep(0.01)
            server.stop()
            waiting.join(timeout=scaled(60))
            assert answer["r"].status_code == 503, answer["r"].text
            assert answer["r"].headers["Retry-After"]
            with httpx.Client(base_url=svc.url, headers={"x-api-key": KEY}) as http:
                assert http.get("/ok").status_code == 200
                for method, path, body in [*ENDPOINTS, *MORE_RUN_ROUTES, *STORE_CRON_REVIEW_ROUTES]:
                    if path.startswith(
                        (
                            "/assistants",
                            "/openapi",
                            "/docs",
                            "/redoc",
                            "/health",
                            "/info",
                            "/review/assets",
                        )
                    ):
                        continue  # served without Redis
                    r = http.request(method, path.replace("t1", tid), json=body)
                    assert r.status_code == 503, (method, path, r.status_code, r.text)
                    assert r.headers["Retry-After"], path
    finally:
        watcher.close()
        if server.process.poll() is None:
            server.stop()
