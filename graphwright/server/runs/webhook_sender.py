"""Runs' webhooks, sent in the background on the process's run loop.

A run hands its webhook over when it ends and gives its job slot back at once, however slow or
failing the receiver is.

At most `concurrency` requests are in flight, and at most `capacity` webhooks wait
(beyond that one is dropped, with a warning: a receiver that never answers must not
grow the process without bound). Each is retried with exponential backoff and jitter
(tenacity) on a network error or a non-2xx answer. The URL is checked again just before
the first call (its host may resolve elsewhere now), the request goes to the address
checked, and logs never show the URL whole (`webhooks`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from graphwright.server.runs import webhooks
from graphwright.tools.runloop import run_loop
from graphwright_errors import UserError

log = logging.getLogger(__name__)


class Refused(Exception):
    """The receiver answered, but not 2xx: tried again."""


@dataclass(frozen=True, kw_only=True)
class Policy:
    """How hard a webhook is tried: attempts, the backoff between them, each one's timeout."""

    attempts: int = 5
    first_wait_s: float = 0.2
    max_wait_s: float = 30.0
    timeout_s: float = 10.0
    concurrency: int = 16
    capacity: int = 1000


class WebhookSender:
    """The process's webhook queue, on the run loop."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy or Policy()
        self._sending: set[asyncio.Task[bool]] = set()
        self._slots: asyncio.Semaphore | None = None  # made on the run loop, which uses it

    def submit(self, url: str, payload: dict[str, Any], allow: str) -> None:
        """Queue the webhook; returns at once, from any thread."""
        run_loop().call_soon_threadsafe(self._start, url, payload, allow)

    def pending(self) -> int:
        """Webhooks queued or in flight."""
        return len(self._sending)

    async def drain(self, timeout_s: float) -> None:
        """Wait up to `timeout_s` for the queued webhooks (a worker shutting down)."""
        if self._sending:
            await asyncio.wait(set(self._sending), timeout=timeout_s)

    def _start(self, url: str, payload: dict[str, Any], allow: str) -> None:
        if len(self._sending) >= self.policy.capacity:
            log.warning(
                "webhook %s dropped: %d webhooks are waiting already",
                webhooks.redacted(url),
                len(self._sending),
            )
            return
        task = asyncio.get_running_loop().create_task(self.send(url, payload, allow))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def send(self, url: str, payload: dict[str, Any], allow: str) -> bool:
        """POST the run to `url` until it answers 2xx (True) or the attempts are spent.

        On the run loop (`submit` puts it there).
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.policy.concurrency)
        slots = self._slots
        try:
            address = (await asyncio.to_thread(webhooks.admit, url, allow))[0]
        except UserError as exc:
            log.warning("webhook %s refused: %s", webhooks.redacted(url), exc)
            return False
        target, headers, extensions = webhooks.pinned(url, address)
        policy = self.policy
        retrying = AsyncRetrying(
            stop=stop_after_attempt(policy.attempts),
            wait=wait_exponential_jitter(
                multiplier=policy.first_wait_s, max=policy.max_wait_s, jitter=policy.first_wait_s
            ),
            retry=retry_if_exception_type((httpx.HTTPError, Refused)),
            before_sleep=lambda state: log.warning(
                "webhook %s failed (%s); trying again",
                webhooks.redacted(url),
                described(state.outcome.exception() if state.outcome else None),
            ),
        )
        try:
            async for attempt in retrying:
                with attempt:
                    async with slots:
                        await self._post(target, payload, headers, extensions)
        except RetryError as exc:
            log.warning(
                "webhook %s given up after %d attempts (%s)",
                webhooks.redacted(url),
                policy.attempts,
                described(exc.last_attempt.exception()),
            )
            return False
        return True

    async def _post(
        self,
        target: str,
        payload: dict[str, Any],
        headers: dict[str, str],
        extensions: dict[str, str],
    ) -> None:
        async with httpx.AsyncClient(timeout=self.policy.timeout_s, follow_redirects=False) as http:
            response = await http.post(target, json=payload, headers=headers, extensions=extensions)
        if not response.is_success:
            raise Refused(f"answered {response.status_code}")


def described(exc: BaseException | None) -> str:
    """What a log may say of a failure: an HTTP error's text may quote the URL."""
    if isinstance(exc, Refused):
        return str(exc)
    return type(exc).__name__ if exc is not None else "no answer"


SENDER = WebhookSender()  # the process's: runs of every executor hand their webhooks here
