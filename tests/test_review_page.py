"""The review page in headless Chromium: see the pending call, press Approve, see the answer."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import httpx
import pytest

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from tests.http_service import Service, running

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


def test_reviewer_approves_in_the_browser_and_sees_the_answer(service: Service) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium (Debian package) is installed by scripts/test"
    service.orch.invoke("agent", EMAIL, thread_id="mail-1")
    service.orch.invoke("agent", "订单 A1001 到哪了？", thread_id="done-1")
    outbox = service.orch.keys.outbox()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{service.url}/review")
        links = page.locator("a").all_inner_texts()
        assert links == ["mail-1"]  # only threads waiting at a gate
        page.click("text=mail-1")
        page.wait_for_selector("pre.mermaid svg", timeout=30_000)  # the graph rendered offline
        args = page.inner_text("div.call pre.args")
        assert '"to": "li@example.com"' in args and '"subject": "Weekly report"' in args
        assert service.orch.client.llen(outbox) == 0
        call_id = page.get_attribute("div.call", "data-call")
        page.click(f"#approve-{call_id}")
        page.wait_for_selector("#answer", timeout=30_000)
        answer = page.inner_text("#answer")
        status = page.inner_text("#thread-status")
        browser.close()
    assert "Sent 'Weekly report' to li@example.com" in answer and status == "completed"
    assert service.orch.client.llen(outbox) == 1
    assert service.orch.state("mail-1").status == "completed"


def test_review_page_of_an_unknown_thread_is_404(service: Service) -> None:
    assert httpx.get(f"{service.url}/review/nope").status_code == 404
