"""Every Python and shell example of README.md and docs/ runs against the test Redis, so a
docs page cannot drift from the code; the README stays short and routes to the docs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphwright import Orchestrator
from graphwright.testing.service import running
from graphwright.testing.until import scaled
from tests.support.doc_examples import SERVED_URL, Block, blocks, pages
from tests.support.paths import ROOT

# Slow: every example of the docs as a reader runs it: CLI processes, a server
pytestmark = pytest.mark.slow

RUNNABLE = [
    p for p in pages() if any((b.lang != "other" or b.title) and b.skip is None for b in blocks(p))
]


@pytest.fixture
def page_env(redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A reader's fresh folder with the venv at ``.venv``, on the test Redis under this
    test's prefix, with the offline model and no project of the checkout's."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GRAPHWRIGHT_GRAPHS",
        "GRAPHWRIGHT_CONFIG",
        "GRAPHWRIGHT_MCP_SERVERS",
        "GRAPHWRIGHT_API_KEY",
        "GRAPHWRIGHT_AUTH",
    ):
        monkeypatch.delenv(var, raising=False)
    venv_bin = Path(sys.executable).parent
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / ".venv").symlink_to(venv_bin.parent)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def forget_modules(folder: Path) -> None:
    """Drop the modules loaded from ``folder``: a reader's next command is a new process."""
    for name, module in list(sys.modules.items()):
        if str(folder) in str(getattr(module, "__file__", None) or ""):
            del sys.modules[name]


def run_block(block: Block, workdir: Path, namespace: dict[str, object]) -> None:
    if block.title is not None:
        target = workdir / block.title
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body, encoding="utf-8")
        forget_modules(workdir)
    elif block.lang == "json":
        try:
            json.loads(block.body)
        except json.JSONDecodeError as e:
            raise AssertionError(f"{block.where}: not JSON: {e}") from None
    elif block.served:
        project = workdir / "langgraph.json"
        orch = Orchestrator.from_config(project) if project.exists() else Orchestrator.from_env()
        with orch, running(orch) as service:
            served = Block(
                **{
                    **vars(block),
                    "served": False,
                    "body": block.body.replace(SERVED_URL, service.url),
                }
            )
            run_block(served, workdir, namespace)
    elif block.lang == "python":
        # Padded so that a traceback's line numbers are the page's own.
        code = compile("\n" * (block.line - 1) + block.body, str(block.page), "exec")
        exec(code, namespace)
    elif block.lang == "bash":
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.body],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=scaled(180),
            check=False,
        )
        assert done.returncode == 0, (
            f"{block.where}: exit {done.returncode}\n{block.body}\n{done.stdout}\n{done.stderr}"
        )


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_on_the_page_runs(page: Path, page_env: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    try:
        for block in blocks(page):
            if (block.lang != "other" or block.title) and block.skip is None:
                run_block(block, page_env, namespace)
    finally:  # a module the page wrote must not answer for another page's of that name
        forget_modules(page_env)


def test_every_skipped_example_says_why() -> None:
    unexplained = [b.where for p in pages() for b in blocks(p) if b.skip == "?"]
    assert not unexplained, f"<!-- test: skip REASON --> needs a reason: {unexplained}"


def test_the_readme_is_short_and_opens_with_the_two_set_up_commands() -> None:
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 15 * 1024, f"README.md is {len(readme)} bytes; move detail to docs/"
    first = next(b for b in blocks(ROOT / "README.md") if b.lang == "bash")
    commands = [ln.split("#")[0].strip() for ln in first.body.splitlines() if ln.strip()]
    assert commands == ["./scripts/demo", "./scripts/test"]


def test_every_link_of_the_readme_reaches_a_file() -> None:
    """The docs site checks its own links (mkdocs --strict); the README is not on it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#\s]+)[^)]*\)", text) if "://" not in t]
    assert targets, "the README links to its docs"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
