"""The cron campaign.

Run by `python -m bench.crons` (the issue's 2 s for 20 s) and, shorter, by
`tests/process/test_cron_workers.py`. The workers serve `PLUGIN`, plain graphs the reference
server serves too, by name: the worker processes load it, this module does not import it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from langgraph_sdk import get_sync_client

from graphwright.server.background.cron_scheduler import run_id_of
from graphwright.server.records.cron_store import next_after, parse_time
from graphwright.testing.service import Service

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "tests.support.plain_graphs:register"


def start_worker(name: str, redis_url: str, prefix: str, effects: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        GRAPHWRIGHT_CRON_TICK_S="0.2",
        GRAPHWRIGHT_CRON_LEASE_S="2",
        GW_TEST_EFFECTS=str(effects),
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "graphwright", "worker", "--name", name],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def ready(workers: list[subprocess.Popen[bytes]]) -> None:
    """Wait until every worker says it reads the queue (it prints that line first)."""
    for proc in workers:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert b"reading" in line, proc.stderr.read() if proc.stderr else line


def campaign(
    service: Service,
    redis_url: str,
    prefix: str,
    effects: Path,
    *,
    every_s: int,
    for_s: int,
    kill: bool,
) -> tuple[list[str], Counter[str]]:
    """Three workers, one stateless cron; returns the expected run ids and the effects seen."""
    workers = [start_worker(f"w{i}", redis_url, prefix, effects) for i in range(3)]
    sdk = get_sync_client(url=service.url, api_key=None)
    try:
        ready(workers)
        cron = sdk.crons.create(
            "counter", schedule=f"* * * * * */{every_s}", input={"goal": "tick"}
        )
        end = (
            parse_time(cron["created_at"]) or 0
        ) + for_s  # the window starts at the server's clock
        start = end - for_s
        sdk.crons.update(cron["cron_id"], end_time=datetime.fromtimestamp(end, UTC))
        slots, due = [], int(parse_time(cron["next_run_date"]) or 0)
        while due <= end:
            slots.append(due)
            due = next_after(cron["schedule"], due)
        expected = [run_id_of(cron["cron_id"], s) for s in slots]
        if kill:
            time.sleep(max(0.0, start + random.uniform(0.3, 0.7) * for_s - time.time()))
            victim = random.choice(workers)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)
        deadline = end + 60
        seen: Counter[str] = Counter()
        while time.time() < deadline:
            seen = Counter(effects.read_text().split()) if effects.exists() else Counter()
            if time.time() > end + 1 and len(seen) >= len(expected):
                break
            time.sleep(0.2)
        return expected, seen
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=15)
