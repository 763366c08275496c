"""The suite's own tables name tests that exist: the slow modules and the slowest tests
(tests/conftest.py), so a renamed or deleted test does not leave a stale reason behind."""

from __future__ import annotations

import importlib

from tests.conftest import SLOW, SLOWEST


def test_every_slow_module_and_slowest_test_named_exists() -> None:
    for module in SLOW:
        importlib.import_module(f"tests.{module}")
    missing = []
    for nodeid in SLOWEST:
        module, name = nodeid.split("::")
        if not hasattr(importlib.import_module(f"tests.{module}"), name.split("[")[0]):
            missing.append(nodeid)
    assert not missing, f"named in SLOWEST but not found: {missing}"
    assert len(SLOWEST) == 30
