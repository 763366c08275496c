"""A page on another origin lists threads and streams a run through the JS SDK in headless
Chromium when `GRAPHWRIGHT_CORS_ORIGINS` or `http.cors` in `langgraph.json` names it;
with no CORS setting at all (`*`, as the reference) a server with no API key refuses it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from tests.support.paths import ROOT, SUPPORT

# Slow: headless Chromium running the JS SDK from another origin
pytestmark = pytest.mark.slow


@pytest.fixture
def page_dir(tmp_path: Path) -> Path:
    """The page and the SDK bundled for browsers (scripts/node-sdk installs and bundles it)."""
    sdk = Path(
        subprocess.run(
            [str(ROOT / "scripts" / "node-sdk")], check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    shutil.copy(sdk / "langgraph-sdk.browser.js", tmp_path)
    shutil.copy(SUPPORT / "pages" / "threads_page.html", tmp_path / "index.html")
    return tmp_path


def project_with_cors(folder: Path, origin: str) -> Path:
    """A langgraph.json whose `http.cors` allows `origin` (and one graph of its own)."""
    (folder / "echo.py").write_text(
        "from tests.support.protocol_graphs import interrupting as graph\n"
    )
    path = folder / "langgraph.json"
    path.write_text(
        json.dumps(
            {
                "graphs": {"echo": "./echo.py:graph"},
                "http": {
                    "cors": {
                        "allow_origins": [origin],
                        "allow_methods": ["*"],
                        "allow_headers": ["*"],
                    }
                },
            }
        )
    )
    return path


@pytest.fixture(params=["no CORS setting", "GRAPHWRIGHT_CORS_ORIGINS", "http.cors"])
def service(
    request: pytest.FixtureRequest,
    redis_url: str,
    prefix: str,
    page_origin: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Service]:
    monkeypatch.delenv("CORS_ALLOW_ORIGINS", raising=False)
    named = (
        {"GRAPHWRIGHT_CORS_ORIGINS": page_origin}
        if request.param == "GRAPHWRIGHT_CORS_ORIGINS"
        else {}
    )
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        **named,
    )
    if request.param == "http.cors":
        orch = Orchestrator.from_config(
            project_with_cors(tmp_path, page_origin), settings=settings, model=OfflineChatModel()
        )
    else:
        orch = Orchestrator(settings=settings, model=OfflineChatModel())
    with running(orch, worker=False) as svc:
        yield svc


def test_a_page_from_another_origin_lists_threads_and_streams_a_run(
    service: Service, page_origin: str, request: pytest.FixtureRequest
) -> None:
    """A named origin works; with no setting (CORS `*`, no API key) the page is refused:
    it reads no thread and starts no run (docs/security.md)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium (Debian package) is installed by scripts/test"
    sdk = get_sync_client(url=service.url, api_key=None)
    made = [sdk.threads.create(metadata={"owner": "browser"})["thread_id"] for _ in range(2)]
    sdk.threads.create(metadata={"owner": "someone else"})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{page_origin}/index.html?api={service.url}")
        page.wait_for_function(
            "document.getElementById('done').textContent"
            " || document.getElementById('error').textContent",
            timeout=scaled(60_000),
        )
        error = page.inner_text("#error")
        info = page.inner_text("#info")
        listed = page.locator("#threads li").all_inner_texts()
        events = page.locator("#events li").all_inner_texts()
        done = page.inner_text("#done")
        browser.close()
    if request.node.callspec.params["service"] == "no CORS setting":
        assert error != "" and info == "" and listed == [] and events == []
        assert all(sdk.runs.list(t) == [] for t in made)
        return
    assert error == ""
    assert '"assistants":true' in info and '"crons":true' in info
    assert listed == made  # only this owner's threads, oldest first
    assert events[0] == "metadata" and "error" not in events  # the reference sends no end event
    assert [e for e in events if e.startswith("updates:")][:3] == [
        "updates:plan",
        "updates:act",
        "updates:observe",
    ]
    assert done == "idle agent"  # the run stamped metadata.graph_id


def test_any_origin_is_allowed_without_credentials_by_default(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CORS_ALLOW_ORIGINS", raising=False)
    settings = Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        asked = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
            "Origin": "http://127.0.0.1:1",
        }
        ok = httpx.options(f"{svc.url}/threads/search", headers=asked)
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in ok.headers  # cookies never ride along


def test_preflights_from_other_origins_are_refused(
    redis_url: str, prefix: str, page_origin: str
) -> None:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_CORS_ORIGINS=page_origin,
    )
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), worker=False
    ) as service:
        _refuses_other_origins(service, page_origin)


def _refuses_other_origins(service: Service, page_origin: str) -> None:
    asked = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    ok = httpx.options(f"{service.url}/threads/search", headers={"Origin": page_origin, **asked})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == page_origin
    other = httpx.options(
        f"{service.url}/threads/search", headers={"Origin": "http://127.0.0.1:1", **asked}
    )
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
