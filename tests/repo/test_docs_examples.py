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
import yaml

from graphwright import Orchestrator
from graphwright.testing.service import running
from graphwright.testing.until import scaled
from tests.support.doc_examples import SERVED_URL, Block, blocks, fence_lines, pages
from tests.support.paths import ROOT

# Slow: every example of the docs as a reader runs it: CLI processes, a server
pytestmark = pytest.mark.slow

RUNNABLE = [p for p in pages() if any(b.runs for b in blocks(p))]
# A page whose every example is broken in its own way (a file block aside): proof that the
# runner below fails on each, rather than passing whatever it is given.
BROKEN = Path(__file__).with_name("doc_examples_broken.md")


@pytest.fixture
def page_env(redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A reader's fresh folder with the venv at `.venv`, on the test Redis under this
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
    """Drop the modules loaded from `folder`: a reader's next command is a new process."""
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
    elif block.lang == "yaml":
        try:
            yaml.safe_load(block.body)
        except yaml.YAMLError as e:
            raise AssertionError(f"{block.where}: not YAML: {e}") from None
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


def run_page(page: Path, workdir: Path) -> None:
    """Every block the suite runs, in reading order, as a reader follows the page."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    try:
        for block in blocks(page):
            if block.runs:
                run_block(block, workdir, namespace)
    finally:  # a module the page wrote must not answer for another page's of that name
        forget_modules(workdir)


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_on_the_page_runs(page: Path, page_env: Path) -> None:
    run_page(page, page_env)


def test_every_fence_is_collected() -> None:
    """No example escapes the runner: the collector finds every fence a line-by-line read
    finds, and each one runs, is skipped with a reason, or is `text` (shown output)."""
    for page in pages():
        found = blocks(page)
        assert 2 * len(found) == fence_lines(page), f"{page}: a fence the collector misses"
        unrun = [b.where for b in found if not b.runs and b.skip is None and b.lang != "text"]
        assert not unrun, f"fences neither run, skipped with a reason, nor `text`: {unrun}"


def test_a_broken_example_fails_the_suite(page_env: Path) -> None:
    """Each broken block of the fixture page fails the same runner the docs pages go
    through, and so the page fails; its bare fence is one the check above flags."""
    page = blocks(BROKEN)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    failed = []
    try:
        for block in page:
            if block.title is not None:
                run_block(block, page_env, namespace)  # a file the next block needs
            elif block.runs:
                with pytest.raises(Exception) as raised:
                    run_block(block, page_env, namespace)
                failed.append((block.lang, type(raised.value).__name__))
    finally:
        forget_modules(page_env)
    assert failed == [
        ("python", "AssertionError"),
        ("python", "ImportError"),
        ("python", "ImportError"),
        ("bash", "AssertionError"),
        ("bash", "AssertionError"),
        ("json", "AssertionError"),
        ("yaml", "AssertionError"),
    ]
    with pytest.raises(AssertionError):
        run_page(BROKEN, page_env)
    bare = [b for b in page if not b.runs and b.skip is None and b.lang != "text"]
    assert [b.lang for b in bare] == ["other"]


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


def test_the_readme_and_the_docs_index_do_not_drift() -> None:
    """The site's home page takes the README's intro and guarantees as snippets (one text,
    two places), and both route to the same tutorials, every one on the site's nav."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for section in ("intro", "guarantees"):
        assert f'--8<-- "README.md:{section}"' in index, f"docs/index.md: {section} not taken"
        for end in ("start", "end"):
            assert f"<!-- --8<-- [{end}:{section}] -->" in readme, f"README.md: {section}"
    start_here = index.split("## Start here", 1)[1].split("\n## ", 1)[0]
    tutorials = re.findall(r"\]\((tutorials/[^)#]+)\)", start_here)
    assert len(tutorials) >= 4, "the docs index routes to its tutorials"
    in_readme = re.findall(r"\]\(docs/(tutorials/[^)#]+)\)", readme)
    assert sorted(set(tutorials)) == sorted(set(in_readme)), "README and index list other tutorials"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    off_site = [t for t in re.findall(r"\]\(docs/([^)#]+)\)", readme) if f": {t}\n" not in nav]
    assert not off_site, f"README.md links to docs pages off the site's nav: {off_site}"
