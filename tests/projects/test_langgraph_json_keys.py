"""Every `langgraph.json` key `langgraph dev` reads is honoured or refused by name: a key
graphwright does not implement stops the load (and `serve`) with one line naming it, and
`auth.path` puts the API behind the project's `Auth` as the reference does."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.project import load_project
from graphwright.settings import Settings
from graphwright.testing.service import LOOPBACK, Service, running
from graphwright.testing.until import scaled, until
from graphwright_errors import ConfigurationError
from tests.support.paths import ROOT, SUPPORT

PLAIN = SUPPORT / "projects_plain"
GRAPHS = {"plain": "./graph.py:graph"}
AUTH = """
from langgraph_sdk import Auth

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> str:
    if authorization != "Bearer let-me-in":
        raise Auth.exceptions.HTTPException(status_code=401, detail="no token")
    return "alice"
"""

REFUSED = [  # (section to add, what the one line names)
    ({"webhooks": {"env_prefix": "LG_"}}, "webhooks"),
    ({"ui": {"chat": "./ui.tsx"}}, "ui"),
    ({"ui_config": {"shared": []}}, "ui_config"),
    ({"encryption": {"path": "./enc.py:enc"}}, "encryption"),
    ({"priority": {"path": "./p.py:p"}}, "priority"),
    ({"node_version": "20"}, "node_version"),
    ({"disable_persistence": True}, "disable_persistence"),
    ({"auth": {"path": "./auth.py:auth", "cache": {"ttl_seconds": 60}}}, "auth.cache"),
    ({"auth": {"path": "./auth.py:auth", "openapi": {}}}, "auth.openapi"),
    ({"http": {"logging_headers": {"includes": ["x-*"]}}}, "http.logging_headers"),
    ({"http": {"middleware_order": "auth_first"}}, "http.middleware_order"),
    (
        {"http": {"cors": {"allow_origins": ["*"], "allow_everything": True}}},
        "http.cors.allow_everything",
    ),
    ({"checkpointer": {"path": "./saver.py:saver"}}, "checkpointer.path"),
    ({"checkpointer": {"serde": {"pickle_fallback": True}}}, "checkpointer.serde"),
    (
        {"checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 5}}},
        "checkpointer.ttl.strategy",
    ),
    ({"store": {"ttl": {"default_ttl": 5, "forever": True}}}, "store.ttl.forever"),
    ({"auht": {"path": "./auth.py:auth"}}, "auht"),  # a typo of a security key
    ({"graphs": {"plain": {"path": "./graph.py:graph", "descripton": "x"}}}, "descripton"),
]
ACCEPTED = {  # read by the reference too (the build keys only by `langgraph build`)
    "$schema": "https://langgra.ph/schema.json",
    "python_version": "3.11",
    "image_distro": "wolfi",
    "dockerfile_lines": [],
    "pip_installer": "uv",
    "env": {},
    "http": {
        "disable_mcp": True,
        "disable_ui": True,
        "enable_custom_route_auth": True,
        "disable_webhooks": True,
        "configurable_headers": {"includes": ["x-user-*"]},
    },
    "auth": {"disable_studio_auth": True},
    "checkpointer": {"ttl": {"strategy": "delete", "default_ttl": 60, "sweep_interval_minutes": 5}},
    "store": {"ttl": {"default_ttl": 5, "refresh_on_read": True}},
    "disable_persistence": False,
}


def project(root: Path, **sections: Any) -> Path:
    shutil.copy(PLAIN / "graph.py", root / "graph.py")
    (root / "auth.py").write_text(AUTH)
    path = root / "langgraph.json"
    path.write_text(json.dumps({"dependencies": ["."], "graphs": GRAPHS, **sections}))
    return path


@pytest.mark.parametrize(("section", "named"), REFUSED, ids=[n for _, n in REFUSED])
def test_a_key_graphwright_does_not_implement_is_refused_by_name(
    tmp_path: Path, section: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_project(project(tmp_path, **section))
    assert named in str(refused.value) and "\n" not in str(refused.value)


def test_the_keys_langgraph_dev_reads_and_graphwright_honours_load(tmp_path: Path) -> None:
    loaded = load_project(project(tmp_path, **ACCEPTED))
    assert loaded.config.http.disable_webhooks and loaded.checkpoint_ttl_s() == 3600


def test_serve_stops_with_one_line_naming_the_key(tmp_path: Path, redis_url: str) -> None:
    path = project(tmp_path, webhooks={"env_prefix": "LG_"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPHWRIGHT_"))}
    env.update(REDIS_URL=redis_url, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "graphwright", "serve", "--port", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "webhooks" in lines[0] and str(path.name) in lines[0], lines


@pytest.fixture
def guarded(tmp_path: Path, redis_url: str, prefix: str) -> Iterator[Service]:
    settings = Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    path = project(tmp_path, auth={"path": "./auth.py:auth"})
    with running(Orchestrator.from_config(path, settings=settings), worker=False) as svc:
        yield svc


def test_auth_path_in_langgraph_json_guards_the_api_like_the_reference(guarded: Service) -> None:
    open_ = httpx.post(f"{guarded.url}/threads/search", json={})
    assert open_.status_code == 401  # graphwright answered 200 with every thread before
    assert httpx.get(f"{guarded.url}/ok").status_code == 200  # as the reference's /ok
    sdk = get_sync_client(url=guarded.url, headers={"Authorization": "Bearer let-me-in"})
    thread = sdk.threads.create()["thread_id"]
    assert sdk.runs.wait(thread, "plain", input={"items": []}) == {"items": ["?"]}
    assert [t["thread_id"] for t in sdk.threads.search()] == [thread]


def test_auth_named_twice_is_refused_not_one_dropped(
    tmp_path: Path, redis_url: str, prefix: str
) -> None:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_AUTH=f"{tmp_path / 'auth.py'}:auth",
    )
    path = project(tmp_path, auth={"path": "./auth.py:auth"})
    with (
        pytest.raises(ConfigurationError, match="auth is named twice"),
        running(Orchestrator.from_config(path, settings=settings), worker=False),
    ):
        pass


def test_disable_webhooks_keeps_the_runs_webhook_uncalled(
    tmp_path: Path, redis_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    called = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            return

        def do_POST(self) -> None:
            called.set()
            self.send_response(200)
            self.end_headers()

    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_WEBHOOK_ALLOW=LOOPBACK,
    )
    path = project(tmp_path, http={"disable_webhooks": True})
    hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    caplog.set_level(logging.INFO, logger="graphwright.server.runs._completion")
    try:
        with running(Orchestrator.from_config(path, settings=settings), worker=False) as svc:
            sdk = get_sync_client(url=svc.url)
            thread = sdk.threads.create()["thread_id"]
            url = f"http://127.0.0.1:{hook.server_address[1]}/hook"
            assert sdk.runs.wait(thread, "plain", input={"items": []}, webhook=url) == {
                "items": ["?"]
            }
            until(
                lambda: "webhooks are off" in caplog.text or called.is_set(),
                "the webhook to be skipped or called",
            )
    finally:
        hook.shutdown()
        hook.server_close()
    assert not called.is_set()


FACTORIES = """
from contextlib import asynccontextmanager

from langgraph_sdk.runtime import ServerRuntime

from graph import builder


def with_runtime(runtime: ServerRuntime):
    return builder().compile(name=runtime.access_context)  # a config dict has no such field


@asynccontextmanager
async def managed():
    yield builder().compile()
"""


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("./factories.py:with_runtime", "a factory taking a ServerRuntime"),
        ("./factories.py:managed", "returns a context manager"),
    ],
)
def test_a_graph_form_graphwright_does_not_call_is_refused_by_name(
    tmp_path: Path, settings: Settings, target: str, message: str
) -> None:
    path = project(tmp_path)
    (tmp_path / "factories.py").write_text(FACTORIES)
    config = json.loads(path.read_text())
    config["graphs"] = {"odd": target}
    path.write_text(json.dumps(config))
    with pytest.raises(ConfigurationError, match=message) as refused:
        Orchestrator.from_config(path, settings=settings).invoke("odd", {"items": []})
    assert "'odd'" in str(refused.value)
