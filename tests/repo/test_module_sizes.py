"""Module sizes: STYLE.md's one job per module, kept under 400 lines in every package of the
source (`scripts/sizes.py` lists the largest). A module that grows past it is split by what
its parts do, not raised here."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ROOT

PACKAGES = ("graphwright", "graphs", "nodes", "tools", "checkpoints", "graphwright_errors")
MAX_LINES = 400


def source_modules() -> list[Path]:
    """Every module of the packages, once: `graphwright/graphs` and the like are links to the
    top-level folders, so a module is counted where it really is."""
    found = {p.resolve() for name in PACKAGES for p in (ROOT / name).rglob("*.py")}
    return sorted(p for p in found if ".venv" not in p.parts)


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_every_source_module_is_at_most_400_lines() -> None:
    modules = source_modules()
    assert len(modules) > 100, f"too few modules found under {ROOT}: {len(modules)}"
    long = sorted(
        ((lines(p), str(p.relative_to(ROOT))) for p in modules if lines(p) > MAX_LINES),
        reverse=True,
    )
    assert not long, "modules over 400 lines (split them by what they do): " + ", ".join(
        f"{name} ({n} lines)" for n, name in long
    )
