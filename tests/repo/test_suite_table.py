"""The suite's own layout and tables: test modules live in subsystem packages, and the
slowest tests named in tests/support/slowest.py exist and are marked slow, so a renamed or
deleted test does not leave a stale reason behind (and `--quick` never runs one)."""

from __future__ import annotations

import importlib

from tests.support.paths import ROOT
from tests.support.slowest import SLOWEST


def marked_slow(module: object) -> bool:
    marks = getattr(module, "pytestmark", [])
    return any(m.name == "slow" for m in (marks if isinstance(marks, list) else [marks]))


def test_every_slowest_test_named_exists_and_is_marked_slow() -> None:
    missing, fast = [], []
    for nodeid in SLOWEST:
        path, name = nodeid.split("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        if not hasattr(module, name.split("[")[0]):
            missing.append(nodeid)
        elif not marked_slow(module):
            fast.append(nodeid)
    assert not missing, f"named in SLOWEST but not found: {missing}"
    assert not fast, f"named in SLOWEST but not marked slow (--quick would run them): {fast}"
    assert len(SLOWEST) == 30


def test_every_test_module_is_in_a_subsystem_package() -> None:
    """A test at the root has no subsystem; a folder without `__init__.py` would put its
    modules under their bare names, where two `test_x.py` of two folders collide."""
    tests = ROOT / "tests"
    at_root = sorted(p.name for p in tests.glob("test_*.py"))
    assert not at_root, f"move into a subsystem folder (see tests/README.md): {at_root}"
    folders = {p.parent for p in tests.rglob("test_*.py")}
    bare = sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists())
    assert not bare, f"test folders without __init__.py: {bare}"
