"""`auth` in `langgraph.json`, through `graphwright serve` and `langgraph dev` on the
same project: the same answers without a token (401), with a wrong one, and with a good one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import scaled, until, wait_exit
from tests.support.langgraph_dev import langgraph_dev
from tests.support.paths import ROOT, SUPPORT

# Slow: the reference Agent Server beside serve, both under auth.path
pytestmark = pytest.mark.slow

PLAIN = SUPPORT / "projects_plain"
AUTH = """
from langgraph_sdk import Auth

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    if authorization != "Bearer let-me-in":
        raise Auth.exceptions.HTTPException(status_code=401, detail="no token")
    return "alice"
"""
GOOD = {"Authorization": "Bearer let-me-in"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(PLAIN / "graph.py", tmp_path / "graph.py")
    (tmp_path / "auth.py").write_text(AUTH)
    (tmp_path / "langgraph.json").write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"plain": "./graph.py:graph"},
                "env": {"PLAIN_GREETING": "hello"},
                "auth": {"path": "./auth.py:auth"},
            }
        )
    )
    return tmp_path


@pytest.fixture
def ours(project: Path, redis_url: str, prefix: str) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPHWRIGHT_"))}
    env.update(REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix, PYTHONPATH=str(ROOT))
    port = free_port()
    api = subprocess.Popen(
        [sys.executable, "-m", "graphwright", "serve", "--port", str(port)],
        env=env,
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        until(lambda: api.poll() is not None or _answers(url), "the API to listen")
        assert api.poll() is None, "graphwright serve exited"
        yield url
    finally:
        api.terminate()
        wait_exit(api, "the API to stop", 15)


def answers(url: str) -> dict[str, Any]:
    """What a caller sees of the API without a token, with a wrong one and with a good one."""
    seen: dict[str, Any] = {"ok": httpx.get(f"{url}/ok").status_code}
    for name, headers in (("none", {}), ("wrong", {"Authorization": "Bearer nope"})):
        seen[f"search, {name}"] = httpx.post(
            f"{url}/threads/search", json={}, headers=headers
        ).status_code
        seen[f"create, {name}"] = httpx.post(f"{url}/threads", json={}, headers=headers).status_code
    sdk = get_sync_client(url=url, headers=GOOD)
    thread = sdk.threads.create()["thread_id"]
    seen["wait, good"] = sdk.runs.wait(thread, "plain", input={"items": ["a"]})
    seen["search, good"] = [t["thread_id"] == thread for t in sdk.threads.search()]
    return seen


def test_auth_in_langgraph_json_answers_as_the_reference(project: Path, ours: str) -> None:
    mine = answers(ours)
    with langgraph_dev(project) as reference:
        theirs = answers(reference)
    assert mine == theirs
    assert mine["search, none"] == 401 and mine["wait, good"] == {"items": ["a", "hello"]}


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200
    except httpx.HTTPError:
        return False
