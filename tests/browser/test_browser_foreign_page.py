"""A web page the reviewer visits cannot drive a default server (no API key) in headless
Chromium: a page of another origin neither approves a gate (with the reviewer's own review
session in the browser), nor starts a run, nor reads threads; a DNS-rebinding page, which
reaches the server under its own name, gets nothing either (docs/security.md)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, free_port, running
from graphwright.testing.until import scaled
from tests.support.browser import browser_for

# Slow: headless Chromium: a foreign and a rebinding page attacking
pytestmark = pytest.mark.slow

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'
ATTACKS = """async ([api, tid, resume]) => {
  const tries = {
    search: [api + "/threads/search", {method: "POST", body: "{}",
             headers: {"content-type": "application/json"}}],
    read: [api + "/threads/" + tid, {}],
    run: [api + "/threads/" + tid + "/runs", {method: "POST", headers:
          {"content-type": "application/json"},
          body: JSON.stringify({assistant_id: "agent", input: {goal: "hi"}})}],
    approve: [api + "/review/" + tid + "/answer", {method: "POST", credentials: "include",
              headers: {"content-type": "application/json"}, body: JSON.stringify(resume)}],
    blind_approve: [api + "/review/" + tid + "/answer", {method: "POST", mode: "no-cors",
                    credentials: "include", headers: {"content-type": "text/plain"},
                    body: JSON.stringify(resume)}],
  };
  const out = {};
  for (const [name, [url, init]] of Object.entries(tries)) {
    try {
      const res = await fetch(url, init);
      out[name] = res.type === "opaque" ? "opaque" : res.status + " " + (await res.text());
    } catch (err) {
      out[name] = "blocked " + String(err);
    }
  }
  return out;
}"""


@contextmanager
def page_server() -> Iterator[str]:
    """Another origin on loopback serving a harmless page (the attack runs in it)."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Cats)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


class Cats(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # the name the stdlib calls
        body = b"<html><body>cute cats</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
        yield svc


def _at_gate(service: Service) -> tuple[str, dict[str, Any]]:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    call = sdk.runs.wait(tid, "agent", input={"goal": EMAIL})["__interrupt__"][0]["value"]["calls"][
        0
    ]
    return tid, {"resume": {call["id"]: {"action": "approve", "digest": call["digest"]}}}


def _untouched(service: Service, tid: str) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    assert sdk.threads.get(tid)["status"] == "interrupted"  # the gate still waits
    assert len(sdk.runs.list(tid)) == 1  # only the run that reached the gate
    assert service.orch.client.llen(service.orch.keys.outbox()) == 0  # no e-mail


def test_a_page_of_another_origin_cannot_approve_start_or_read(service: Service) -> None:
    from playwright.sync_api import sync_playwright

    tid, resume = _at_gate(service)
    with sync_playwright() as p, page_server() as evil:
        browser = browser_for(p)
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{service.url}/review/{tid}")  # the reviewer has the page open: a session
        assert page.locator("fieldset.call").count() == 1
        attacker = context.new_page()  # another port of the same host: another origin
        attacker.goto(f"{evil}/")
        tried = attacker.evaluate(ATTACKS, [service.url, tid, resume])
        browser.close()
    for name in ("search", "read", "run"):  # sent (CORS answers *), and refused
        assert tried[name].startswith("403 ") and tid not in tried[name], (name, tried[name])
    # With the review session's cookie the browser itself may stop the request (CORS * is
    # never credentialed) or send it unreadable: either way the state below is the judge.
    assert tried["approve"].startswith(("403 ", "blocked ")), tried["approve"]
    assert tried["blind_approve"] == "opaque"
    _untouched(service, tid)


def test_a_dns_rebinding_page_gets_nothing(service: Service) -> None:
    """The attacker's name resolving to 127.0.0.1 makes its page same-origin with the
    server in the browser's eyes; the Host header still names the attacker's domain."""
    from playwright.sync_api import sync_playwright

    tid, resume = _at_gate(service)
    port = service.url.rsplit(":", 1)[1]
    rebound = f"http://rebind.test:{port}"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=["--no-sandbox", "--host-resolver-rules=MAP rebind.test 127.0.0.1"],
        )
        page = browser.new_page()
        page.goto(f"{rebound}/ok", timeout=scaled(30_000))
        tried = page.evaluate(ATTACKS, [rebound, tid, resume])
        browser.close()
    for name in ("search", "read", "run", "approve", "blind_approve"):
        assert tried[name].startswith("403 ") and "not this server's name" in tried[name], (
            name,
            json.dumps(tried[name]),
        )
    _untouched(service, tid)
