"""Waits on conditions, never on the clock alone, with limits scaled to how busy the machine is.

One setting, `GRAPHWRIGHT_TEST_SLOWDOWN` (a factor, at least 1), stretches every limit of
a test: unset, it follows the load average per core, so a suite beside two CPU burners
waits longer instead of failing. A limit only bounds a wait; what ends it is the condition.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
MAX_AUTO_SLOWDOWN = 5.0  # from the load: beyond this, a wait is a hang, not a busy machine


def slowdown() -> float:
    """The factor every test limit is multiplied by.

    `GRAPHWRIGHT_TEST_SLOWDOWN`, or the 1-minute load average per core (at least 1, at most
    `MAX_AUTO_SLOWDOWN`).
    """
    given = os.environ.get("GRAPHWRIGHT_TEST_SLOWDOWN", "").strip()
    if given:
        try:
            return max(1.0, float(given))
        except ValueError:
            raise ValueError(f"GRAPHWRIGHT_TEST_SLOWDOWN must be a number, not {given!r}") from None
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return min(MAX_AUTO_SLOWDOWN, max(1.0, load))


def scaled(seconds: float) -> float:
    """`seconds` as a limit on this machine now (see `slowdown`)."""
    return seconds * slowdown()


def until(
    check: Callable[[], T], what: str, timeout_s: float = 60, *, interval_s: float = 0.02
) -> T:
    """Poll `check` until it returns something true and return that.

    Fail naming `what` did not happen after `timeout_s` (scaled). For background runs, workers and
    servers, whose progress a test can only observe.
    """
    limit = scaled(timeout_s)
    deadline = time.monotonic() + limit
    while not (value := check()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {limit:.0f} s waiting for {what}")
        time.sleep(interval_s)
    return value


def wait_exit(
    proc: subprocess.Popen[bytes] | subprocess.Popen[str], what: str, timeout_s: float = 60
) -> int:
    """`proc`'s exit code once it ends.

    Fail naming `what` after `timeout_s` (scaled), killing it first so a failed test leaves nothing
    running.
    """
    limit = scaled(timeout_s)
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"timed out after {limit:.0f} s waiting for {what}") from None
