"""Redis clients that ride through a restart: every command retries within a time budget.

Connection-level failures (refused, reset, timed out, still loading its data) are
retried with exponential backoff and jitter until the budget is spent; then the
error reaches the caller, which reports Redis as unreachable. Every write graphwright
sends is safe to repeat: checkpoint and record scripts are idempotent, the lock
script recognises its own acquisition, and a repeated trace entry is only a duplicate
line in the trace.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from graphwright.checkpoints.connect import connect as open_client

T = TypeVar("T")


class BudgetRetry(Retry):
    """redis-py's `Retry` bounded by elapsed time instead of a count."""

    def __init__(
        self,
        budget_s: float,
        *,
        cap_s: float = 1.0,
        base_s: float = 0.05,
        attempts: int = -1,
    ) -> None:
        super().__init__(
            ExponentialWithJitterBackoff(cap=cap_s, base=base_s),
            retries=-1,
            supported_errors=(RedisConnectionError, RedisTimeoutError, socket.timeout),
        )
        self.budget_s = budget_s
        self.attempts = attempts

    def get_retries(self) -> int:
        """Attempts a cluster client makes, re-reading the slot map between them (-1: none)."""
        return self.attempts

    def call_with_retry(
        self,
        do: Callable[[], T],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        self._backoff.reset()  # type: ignore[no-untyped-call]  # untyped in redis-py
        deadline = time.monotonic() + self.budget_s
        failures = 0
        while True:
            try:
                return do()
            except self._supported_errors as error:
                if is_retryable and not is_retryable(error):
                    raise
                failures += 1
                fail(error, failures) if with_failure_count else fail(error)
                pause = self._backoff.compute(failures)
                if time.monotonic() + pause > deadline:
                    raise error
                time.sleep(pause)


def connect(url: str, *, cluster: bool = False, retry_budget_s: float = 15.0) -> redis.Redis:
    """A client for `url` whose commands retry through outages up to `retry_budget_s`.

    `url` may name a single server, a cluster node (`cluster=True`) or Sentinels
    (`redis+sentinel://`); see `graphwright.checkpoints.connect.connect`.
    """
    if cluster:
        # A dead master is failed over by its replica within seconds. Transactions retry
        # within the budget, re-reading the slot map after each failure; single commands and
        # scripts wait it out in checkpoints.connect.RetryingCluster.
        cluster_retry = BudgetRetry(retry_budget_s, attempts=3)
        return open_client(  # type: ignore[no-any-return]
            url,
            cluster=True,
            retry=cluster_retry,
            failover_budget_s=retry_budget_s,
        )
    retry = BudgetRetry(retry_budget_s)
    return open_client(url, retry=retry, health_check_interval=0)  # type: ignore[no-any-return]
