"""A run executing inside the API process (a wait or a stream, without `serve --queue`)
survives that process: killed with SIGKILL mid-tool, or after its external write took
effect, its lease on the delayed queue runs out and a worker finishes the run from its
checkpoint, its write done once; a kill inside the write comes back as an unknown outcome,
never as a second effect; the thread takes its next run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
import redis

from graphwright import Orchestrator
from graphwright.checkpoints.keys import Keys
from graphwright.offline import OfflineChatModel
from graphwright.server.records.run_store import RunStore
from graphwright.settings import Settings
from graphwright.testing.kit import until
from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: an API process killed mid-stream, a worker finishing its run
pytestmark = pytest.mark.slow

PLUGIN = "tests.support.slow_graphs:register_all"
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'


def test_a_run_in_a_killed_api_process_is_finished_by_a_worker_once(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        PYTHONPATH=str(ROOT),
    )
    port = free_port()
    api = subprocess.Popen(
        [sys.executable, "-m", "graphwright", "serve", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    worker = None
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: _answers(url), "the API to listen")
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "slow_agent", "input": {"goal": GOAL}, "stream_mode": ["updates"]}
        streaming = threading.Thread(
            target=_stream, args=(f"{url}/threads/{tid}/runs/stream", body), daemon=True
        )
        streaming.start()
        until(lambda: client.get(f"{prefix}:slow:started") == b"1", "the slow tool to start")
        api.send_signal(signal.SIGKILL)  # the run executes in this process: it dies with it
        api.wait(timeout=scaled(10))
        store = RunStore(client, Keys(prefix=prefix))
        (run_id,) = store.active(tid)
        assert store.get(tid, run_id).status == "running"  # nobody is left to end it
        worker = subprocess.Popen(
            [sys.executable, "-m", "graphwright", "worker", "--name", "W"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        until(
            lambda: store.get(tid, run_id).status not in ("pending", "running"),
            "the worker to end the run",
            20,
        )
        assert store.get(tid, run_id).status == "success"
        assert client.hlen(Keys(prefix=prefix).calendar()) == 1  # the event, created once
        assert int(client.get(f"{prefix}:slow:started") or 0) == 2  # the killed step ran again
    finally:
        for proc in (api, worker):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(15))


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200
    except httpx.HTTPError:
        return False


def _stream(url: str, body: dict[str, object]) -> None:
    try:
        with httpx.stream("POST", url, json=body, timeout=scaled(120)) as response:
            for _ in response.iter_lines():
                pass
    except httpx.HTTPError:
        pass  # the API process was killed under it


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    api = subprocess.Popen(
        [sys.executable, "-m", "graphwright", "serve", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    until(lambda: _answers(url), "the API to listen")
    return api, url


@pytest.mark.parametrize(
    "where", ["after the write was recorded", "inside the write, after its effect"]
)
def test_an_api_killed_after_the_effect_leaves_one_effect_and_a_working_thread(
    where: str, redis_url: str, prefix: str, client: redis.Redis, tmp_path: Path
) -> None:
    effects = tmp_path / "effects"
    effects.touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        PYTHONPATH=str(ROOT),
        SLOW_GRAPHS_EFFECTS=str(effects),
    )
    recorded = where.startswith("after")
    hold = f"{prefix}:slow:{'hold_answer' if recorded else 'hold'}"
    client.set(hold, 1)  # the run waits here, past its effect, until the kill
    api, url = _serve(env)
    worker = second = None
    try:
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "held_write", "input": {"goal": GOAL}}
        threading.Thread(
            target=_post, args=(f"{url}/threads/{tid}/runs/wait", body), daemon=True
        ).start()
        marker = f"{prefix}:slow:{'answering' if recorded else 'write_effected'}"
        until(lambda: client.get(marker) == b"1", f"the run to be held {where}")
        assert len(effects.read_text().splitlines()) == 1  # the effect is out
        api.send_signal(signal.SIGKILL)
        api.wait(timeout=scaled(10))
        client.delete(hold)
        store = RunStore(client, Keys(prefix=prefix))
        (run_id,) = store.active(tid)
        worker = subprocess.Popen(
            [sys.executable, "-m", "graphwright", "worker", "--name", "W"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        until(
            lambda: store.get(tid, run_id).status not in ("pending", "running"),
            "the worker to end the run",
            30,
        )
        assert store.get(tid, run_id).status == "success"
        assert len(effects.read_text().splitlines()) == 1  # never done a second time
        settings = Settings(
            _env_file=None,
            REDIS_URL=redis_url,
            GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
            GRAPHWRIGHT_GRAPHS=PLUGIN,
        )
        orch = Orchestrator(settings=settings, model=OfflineChatModel())
        pending = orch.state(tid).pending
        orch.client.close()
        if recorded:
            assert pending is None and orch.state(tid).values.get("stop_reason") == "answered"
            nxt: dict[str, object] = {"input": {"goal": "hello"}}
        else:  # nobody can know whether the write happened: a reviewer is asked
            assert pending is not None and [c.kind for c in pending.calls] == ["outcome_unknown"]
            settle = {"action": "mark_done", "digest": pending.calls[0].digest, "result": "seen it"}
            nxt = {"command": {"resume": settle}}
        second, url = _serve(env)  # the thread is not wedged: its next run goes through
        answer = httpx.post(
            f"{url}/threads/{tid}/runs/wait",
            timeout=scaled(60),
            json={"assistant_id": "held_write", **nxt},
        )
        assert answer.status_code == 200, answer.text
        assert store.list(tid, 1)[0].status == "success"
        assert len(effects.read_text().splitlines()) == 1
    finally:
        for proc in (api, worker, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(15))


def _post(url: str, body: dict[str, object]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the API process was killed under it
        httpx.post(url, json=body, timeout=scaled(120))
