"""A run executing inside the API process (a wait or a stream, without ``serve --queue``)
survives that process: killed with SIGKILL mid-tool, its lease on the delayed queue runs out
and a worker finishes the run from its checkpoint, its write done once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import redis

from checkpoints.keys import Keys
from graphwright.server.runs import RunStore
from graphwright.testing.kit import until
from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "tests.slow_graphs:register_all"
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'



def test_a_run_in_a_killed_api_process_is_finished_by_a_worker_once(
        redis_url: str, prefix: str, client: redis.Redis) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix, GRAPHWRIGHT_GRAPHS=PLUGIN,
               GRAPHWRIGHT_CLAIM_IDLE_MS="1000", PYTHONPATH=str(ROOT))
    port = free_port()
    api = subprocess.Popen([sys.executable, "-m", "graphwright", "serve", "--port", str(port)],
                           env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    worker = None
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: _answers(url), "the API to listen")
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "slow_agent", "input": {"goal": GOAL}, "stream_mode": ["updates"]}
        streaming = threading.Thread(target=_stream, args=(f"{url}/threads/{tid}/runs/stream", body),
                                     daemon=True)
        streaming.start()
        until(lambda: client.get(f"{prefix}:slow:started") == b"1", "the slow tool to start")
        api.send_signal(signal.SIGKILL)  # the run executes in this process: it dies with it
        api.wait(timeout=scaled(10))
        store = RunStore(client, Keys(prefix=prefix))
        (run_id,) = store.active(tid)
        assert store.get(tid, run_id).status == "running"  # nobody is left to end it
        worker = subprocess.Popen([sys.executable, "-m", "graphwright", "worker", "--name", "W"],
                                  env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until(lambda: store.get(tid, run_id).status not in ("pending", "running"), "the worker to end the run", 20)
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
