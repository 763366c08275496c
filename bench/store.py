"""RedisStore against LangGraph's InMemoryStore: put, get and search latency at 1k and 10k records.

    python -m bench.store

Starts its own redis-server. Records are spread over 100 user namespaces, as memories
are. Prints microseconds per operation (median of the batch) and RedisStore's ratio to
InMemoryStore measured in the same run.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from graphwright.checkpoints.store import RedisStore
from graphwright.testing.redis_servers import start_server

USERS = 100


def timed(fn: Callable[[int], object], n: int) -> float:
    """Median microseconds of `n` calls."""
    samples = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


def measure(store: BaseStore, records: int) -> dict[str, float]:
    def ns(i: int) -> tuple[str, str]:
        return ("users", f"u{i % USERS}")

    put = timed(
        lambda i: store.put(ns(i), f"k{i}", {"kind": "preference", "n": i, "text": f"value {i}"}),
        records,
    )
    get = timed(lambda i: store.get(ns(i * 7919 % records), f"k{i * 7919 % records}"), 500)
    one = timed(lambda i: store.search(ns(i), limit=10), 200)
    filtered = timed(
        lambda i: store.search(("users",), filter={"n": i * 37 % records}, limit=1), 20
    )
    return {
        "put": put,
        "get": get,
        "search one user (limit 10)": one,
        "search all users with a filter": filtered,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp))
        try:
            client = redis.Redis(port=server.port)
            print(
                f"{'records':>8} {'operation':<34}{'InMemory µs':>14}{'Redis µs':>12}{'ratio':>8}"
            )
            for records in (1_000, 10_000):
                memory = measure(InMemoryStore(), records)
                on_redis = measure(RedisStore(client, prefix=f"bench{records}"), records)
                for op, base in memory.items():
                    print(
                        f"{records:>8} {op:<34}{base:>14.1f}{on_redis[op]:>12.1f}"
                        f"{on_redis[op] / base:>7.1f}x"
                    )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
