"""A React page on another origin chats through `useStream` (`@langchain/langgraph-sdk/react`)
in headless Chromium: with no CORS setting at all and with `http.cors` in `langgraph.json`
the streamed reply renders; with `CORS_ALLOW_ORIGINS` naming another origin the page shows
the browser's refusal and nothing reaches the server."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.settings import Settings
from graphwright.testing.fixed_openai import REPLY, serving
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from tests.support.paths import ROOT
from tests.support.protocol_graphs import CHAT_URL_ENV

# Slow: headless Chromium rendering a useStream page from another origin
pytestmark = pytest.mark.slow

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>useStream</title></head>
<body><div id="root"></div><script src="use-stream.page.js"></script></body></html>
"""
SETTLED = """() => document.getElementById('error')?.textContent
  || (document.getElementById('loading')?.textContent === 'false'
      && [...document.querySelectorAll('#messages li')]
        .some((li) => li.textContent.startsWith('ai: ')))"""


@pytest.fixture
def page_dir(tmp_path: Path) -> Path:
    """The React page, bundled with the SDK and React by scripts/node-sdk."""
    sdk = Path(
        subprocess.run(
            [str(ROOT / "scripts" / "node-sdk")], check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    served = tmp_path / "page"
    served.mkdir()
    shutil.copy(sdk / "use-stream.page.js", served)
    (served / "index.html").write_text(PAGE)
    return served


def chat_project(folder: Path, cors: dict[str, Any] | None) -> Path:
    """A langgraph.json serving the streaming chat graph as `chat`, with `http.cors` if given."""
    (folder / "chat.py").write_text("from tests.support.protocol_graphs import chat as graph\n")
    config: dict[str, Any] = {"graphs": {"chat": "./chat.py:graph"}}
    if cors is not None:
        config["http"] = {"cors": cors}
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(params=["no CORS setting", "http.cors", "CORS_ALLOW_ORIGINS elsewhere"])
def service(
    request: pytest.FixtureRequest,
    redis_url: str,
    prefix: str,
    page_origin: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Service]:
    monkeypatch.delenv("CORS_ALLOW_ORIGINS", raising=False)
    monkeypatch.delenv("GRAPHWRIGHT_CORS_ORIGINS", raising=False)
    cors = None
    if request.param == "http.cors":
        cors = {"allow_origins": [page_origin], "allow_methods": ["*"], "allow_headers": ["*"]}
    if request.param == "CORS_ALLOW_ORIGINS elsewhere":
        monkeypatch.setenv("CORS_ALLOW_ORIGINS", "http://127.0.0.1:1")
    settings = Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    with serving() as chat:
        monkeypatch.setenv(CHAT_URL_ENV, chat)
        orch = Orchestrator.from_config(chat_project(tmp_path, cors), settings=settings)
        with running(orch, worker=False) as svc:
            yield svc


def chat_in_browser(page_url: str) -> tuple[list[str], str]:
    """Open the page, wait until the reply rendered or an error showed: (messages, error)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium (Debian package) is installed by scripts/test"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(page_url)
        page.wait_for_function(SETTLED, timeout=scaled(60_000))
        shown = page.locator("#messages li").all_text_contents(), page.inner_text("#error")
        browser.close()
    return shown


def test_a_use_stream_page_on_another_origin_renders_the_streamed_reply(
    service: Service,
    page_origin: str,
    request: pytest.FixtureRequest,
) -> None:
    messages, error = chat_in_browser(f"{page_origin}/index.html?api={service.url}")
    threads = get_sync_client(url=service.url, api_key=None).threads.search()
    if request.node.callspec.params["service"] == "CORS_ALLOW_ORIGINS elsewhere":
        assert "Failed to fetch" in error and messages == []
        assert threads == []  # the preflight was refused: no thread was made
        return
    if request.node.callspec.params["service"] == "no CORS setting":
        # CORS answers * as the reference, but a server with no API key serves no page of
        # another origin (docs/security.md): the page is told so and nothing was made.
        assert error != "" and messages == [] and threads == []
        return
    assert error == ""
    assert messages == ["human: hello from the browser", f"ai: {REPLY}"]
    assert len(threads) == 1 and threads[0]["status"] == "idle"
    stored = threads[0]["values"]["messages"]
    assert [m["type"] for m in stored] == ["human", "ai"] and stored[1]["content"] == REPLY
