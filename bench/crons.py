"""The issue's cron campaign.

Three worker processes, a cron every 2 s for 20 s, one worker SIGKILLed mid-way; every due run must
run exactly once (counted in a file, outside Redis).

    python -m bench.crons [--every 2] [--for 20] [--no-kill]

The test suite runs the same campaign shorter (tests/process/test_cron_workers.py: 1 s for 8 s).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cron_campaign import PLUGIN, campaign
from graphwright import Orchestrator, Settings
from graphwright.testing.redis_servers import start_server
from graphwright.testing.service import running


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=int, default=2, help="seconds between due runs")
    parser.add_argument("--for", dest="for_s", type=int, default=20, help="seconds the cron runs")
    parser.add_argument("--no-kill", action="store_true", help="kill no worker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp))
        settings = Settings(
            _env_file=None,
            REDIS_URL=server.url,  # type: ignore[call-arg]
            GRAPHWRIGHT_KEY_PREFIX="benchcrons",
            GRAPHWRIGHT_GRAPHS=PLUGIN,
        )
        try:
            with running(Orchestrator(settings=settings), worker=False) as svc:
                started = time.perf_counter()
                expected, seen = campaign(
                    svc,
                    server.url,
                    "benchcrons",
                    Path(tmp) / "effects.txt",
                    every_s=args.every,
                    for_s=args.for_s,
                    kill=not args.no_kill,
                )
        finally:
            server.stop()
    lost = [r for r in expected if r not in seen]
    extra = [r for r in seen if r not in expected]
    doubled = [r for r, n in seen.items() if n > 1]
    print(
        f"cron every {args.every} s for {args.for_s} s, 3 workers"
        f"{'' if args.no_kill else ', one SIGKILLed mid-way'}: {len(expected)} due runs, "
        f"{sum(seen.values())} effects, lost {len(lost)}, extra {len(extra)}, "
        f"doubled {len(doubled)} "
        f"({time.perf_counter() - started:.0f} s)"
    )
    if lost or extra or doubled:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
