"""A plain LangGraph project runs where `langchain` is not installed (it is no dependency of
graphwright): served and invoked in a process that cannot import it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled, until, wait_exit
from tests.support.paths import ROOT, SUPPORT

# Slow: serve and invoke in processes that cannot import langchain
pytestmark = pytest.mark.slow

PROJECT = SUPPORT / "projects_plain"
BLOCKER = '''
import sys

class NoLangChain:
    """Every import of langchain fails, as where it is not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "langchain" or name.startswith("langchain."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoLangChain())
'''
# a compiled graph by file path and by module path; factories sync and async, with and
# without the config
FORMS = ["plain", "module_path", "factory", "async_factory", "async_configured"]
INVOKE = """
import sys
from graphwright import Orchestrator
orch = Orchestrator.from_config(sys.argv[1])
for graph in sys.argv[2:]:
    done = orch.invoke(graph, {"items": ["a"]})
    assert orch.state(done.thread_id).values == {"items": ["a", "hello"]}, graph
    print(done.status)
assert "langchain" not in sys.modules
"""


@pytest.fixture
def env(tmp_path: Path, redis_url: str, prefix: str) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    given = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPHWRIGHT_"))}
    given.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
    )
    return given


def test_the_blocker_makes_langchain_unimportable(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import langchain.agents"],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 1 and "No module named 'langchain'" in done.stderr


def test_a_plain_project_is_invoked_without_langchain(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", INVOKE, str(PROJECT / "langgraph.json"), *FORMS],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["completed"] * len(FORMS)


@pytest.fixture
def served(env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    api = subprocess.Popen(
        [sys.executable, "-m", "graphwright", "serve", "--port", str(port)],
        env=env,
        cwd=PROJECT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: api.poll() is not None or _answers(url), "the API to listen")
        assert api.poll() is None, api.stderr.read().decode()[-2000:] if api.stderr else ""
        yield url
    finally:
        api.terminate()
        wait_exit(api, "the API to stop", 15)


def test_a_plain_project_is_served_without_langchain(served: str) -> None:
    sdk = get_sync_client(url=served)
    for graph in FORMS:
        thread = sdk.threads.create()["thread_id"]
        assert sdk.runs.wait(thread, graph, input={"items": ["a"]}) == {"items": ["a", "hello"]}


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200
    except httpx.HTTPError:
        return False
