"""Redis memory over many runs.

Stateless background runs of the offline agent through the HTTP service's run path and one worker
(`--jobs 10`), with a short run retention; Redis's `used_memory` and the queue's length after each
batch should stay flat, not grow.

    python -m bench.retention [--runs 10000] [--batch 500] [--retention 5]
"""

from __future__ import annotations

import argparse
import threading
import time

from graphwright.server.app import create_app
from graphwright.server.background.worker import Worker
from graphwright.server.http.launch import Launcher
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.testing.kit import bound_orchestrator, settings_for, until
from graphwright.testing.redis_servers import redis_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--retention", type=int, default=5, help="GRAPHWRIGHT_RUN_RETENTION_S")
    args = parser.parse_args()
    with redis_server() as server:
        settings = settings_for(
            server.url, GRAPHWRIGHT_RUN_RETENTION_S=args.retention, GRAPHWRIGHT_RUN_RATE=0
        )
        with bound_orchestrator(server.url, settings=settings) as orch:
            svc = create_app(orch).state.service
            worker = Worker(orch, name="bench", jobs=10, block_ms=200, grace_s=5)
            working = threading.Thread(target=worker.run_forever, daemon=True)
            working.start()
            launch, body = Launcher(svc), RunCreate(assistant_id="agent", input={"goal": "hello"})
            print(f"{'runs':>7} {'used_memory':>12} {'queue':>6} {'keys':>6} {'runs/s':>7}")
            began, done = time.monotonic(), 0
            while done < args.runs:
                last = [launch.start(None, body, background=True) for _ in range(args.batch)][-1]
                done += args.batch
                until(
                    lambda r=last: (
                        svc.store.raw(r.thread_id, r.run_id).get("status") == "success"
                        and orch.client.xlen(orch.keys.queue()) == 0
                    ),
                    "the batch to run",
                    600,
                )
                info = orch.client.info("memory")
                print(
                    f"{done:>7} {info['used_memory']:>12} {orch.client.xlen(orch.keys.queue()):>6} "
                    f"{orch.client.dbsize():>6} {done / (time.monotonic() - began):>7.1f}",
                    flush=True,
                )
            time.sleep(args.retention + 1)  # the last batch's records expire too
            info = orch.client.info("memory")
            print(
                f"after retention: used_memory {info['used_memory']}, keys {orch.client.dbsize()}"
            )
            worker.stop.set()
            working.join(timeout=10)


if __name__ == "__main__":
    main()
