"""The tests' one wait: a condition, a limit stretched by GRAPHWRIGHT_TEST_SLOWDOWN, a message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from graphwright.testing.until import MAX_AUTO_SLOWDOWN, scaled, slowdown, until, wait_exit


def test_the_setting_stretches_every_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWRIGHT_TEST_SLOWDOWN", "3")
    assert scaled(2) == 6
    monkeypatch.setenv("GRAPHWRIGHT_TEST_SLOWDOWN", "0.5")  # never shorter than written
    assert slowdown() == 1


def test_unset_it_follows_the_load_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHWRIGHT_TEST_SLOWDOWN", raising=False)
    assert 1 <= slowdown() <= MAX_AUTO_SLOWDOWN


def test_a_bad_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWRIGHT_TEST_SLOWDOWN", "fast")
    with pytest.raises(ValueError, match="GRAPHWRIGHT_TEST_SLOWDOWN must be a number, not 'fast'"):
        slowdown()


def test_until_returns_what_held_and_names_what_did_not_happen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GRAPHWRIGHT_TEST_SLOWDOWN", "1")
    calls = iter([None, None, "ready"])
    assert until(lambda: next(calls), "the value") == "ready"
    with pytest.raises(AssertionError, match="timed out after 0 s waiting for the worker to start"):
        until(lambda: False, "the worker to start", timeout_s=0.05)


def test_wait_exit_kills_what_does_not_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWRIGHT_TEST_SLOWDOWN", "1")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(AssertionError, match="waiting for the sleeper to exit"):
        wait_exit(proc, "the sleeper to exit", timeout_s=0.2)
    assert proc.poll() is not None  # killed, not left running
