"""What `durability="sync"` costs against LangGraph's default `"async"`, same run, same work.

    python -m bench.durability [--runs 3] [--threads 20]

Each measurement runs the agent (offline model, built-in tools, one ungated write) on
`--threads` fresh threads through the Orchestrator against a local redis-server, once
with each durability mode, alternating so both see the same machine. Prints the mean
milliseconds per thread for each mode, per run and overall, and the ratio sync / async.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.testing.redis_servers import start_server
from graphwright.tools.policy import Policy

GOALS = [
    'Schedule "Design review" on 2026-12-{day:02d} from 10:00 to 11:00.',
    "订单 A1001 到哪了？",
]


def measure(url: str, durability: str, threads: int) -> float:
    """Milliseconds per thread for `threads` runs in this durability mode."""
    settings = Settings(
        _env_file=None,
        REDIS_URL=url,
        GRAPHWRIGHT_DURABILITY=durability,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=f"d{uuid.uuid4().hex[:8]}",
    )
    orch = Orchestrator(
        settings=settings,
        model=OfflineChatModel(),
        policy=Policy(per_tool={"create_event": "never"}),
    )
    orch.invoke("agent", "订单 A1001 到哪了？")  # compile and connect outside the timing
    started = time.perf_counter()
    for i in range(threads):
        result = orch.invoke("agent", GOALS[i % 2].format(day=1 + i % 28))
        assert result.status == "completed", result.error
    elapsed = (time.perf_counter() - started) * 1000 / threads
    orch.client.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp))
        try:
            rows = []
            for run in range(args.runs):
                first, second = ("sync", "async") if run % 2 == 0 else ("async", "sync")
                ms = {first: measure(server.url, first, args.threads)}
                ms[second] = measure(server.url, second, args.threads)
                rows.append(ms)
                print(
                    f"run {run + 1}: sync {ms['sync']:.1f} ms/thread, async {ms['async']:.1f} "
                    f"ms/thread, ratio {ms['sync'] / ms['async']:.2f}"
                )
        finally:
            server.stop()
    sync = statistics.mean(r["sync"] for r in rows)
    async_ = statistics.mean(r["async"] for r in rows)
    ratios = [r["sync"] / r["async"] for r in rows]
    print(
        f"mean: sync {sync:.1f} ms/thread, async {async_:.1f} ms/thread; ratio sync/async "
        f"{sync / async_:.2f} (per run {', '.join(f'{x:.2f}' for x in ratios)})"
    )


if __name__ == "__main__":
    main()
