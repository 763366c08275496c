"""Everything graphwright imports is a declared dependency (or one of theirs): the test venv
has the dev extras, so an undeclared import would pass every other test and break a user's
`pip install graphwright` (`langchain` once did, for every project graph)."""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.support.paths import ROOT

OURS = ("graphwright", "graphs", "nodes", "tools", "checkpoints", "graphwright_errors")
# modules that import an extra on purpose, each for a feature that names it
OPTIONAL = {"graphwright/testing/pytest_plugin.py": {"pytest"}}


def _name(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def installed_with_graphwright() -> set[str]:
    """The distributions `pip install graphwright` brings: the closure of its requirements."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [
        (Requirement(r), frozenset[str]())
        for r in metadata.requires("graphwright") or []
        if "extra ==" not in r
    ]
    while todo:
        req, _ = todo.pop()
        key = (_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        for line in metadata.requires(req.name) or []:
            sub = Requirement(line)
            envs = [{"extra": e} for e in (req.extras or {""})]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in envs):
                todo.append((sub, frozenset()))
    return {name for name, _ in seen}


def top_level_imports(path: Path) -> set[str]:
    """The top-level modules `path` imports, leaving out `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for n in ast.walk(block)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_every_runtime_import_is_a_declared_dependency() -> None:
    dists = installed_with_graphwright()
    allowed = set(sys.stdlib_module_names) | set(OURS) | {"__future__"}
    allowed |= {
        module
        for module, owners in metadata.packages_distributions().items()
        if any(_name(d) in dists for d in owners)
    }
    undeclared = []
    for package in OURS:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            extra = top_level_imports(path) - allowed - OPTIONAL.get(where, set())
            undeclared += [f"{where}: {name}" for name in sorted(extra)]
    assert not undeclared, f"imports of undeclared packages: {undeclared}"
