"""The review page in headless Chromium, as a reviewer uses it: log in once, read the
conversation, answer every pending call with one submit, see the answer."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator

import httpx
import pytest
from langchain_openai import ChatOpenAI
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from pydantic import SecretStr
from typing_extensions import TypedDict

from graphwright import Orchestrator
from graphwright.graphs.context import Graph, GraphContext
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from tests.support.browser import browser_for
from tests.support.paths import ROOT

# Slow: headless Chromium answering gates on the review page
pytestmark = pytest.mark.slow

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'
KEY = "review-key-7f3a9c"
HOSTILE = "call_'\"<>x"  # a call id that would break out of inline script or an attribute
ARTIFACTS = ROOT / "tests" / "artifacts"  # screenshots, ignored by git


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


@pytest.fixture
def keyed(settings: Settings, scripted: ScriptedOpenAI) -> Iterator[Service]:
    """The agent on the real ChatOpenAI client against the scripted server, behind an API key."""
    model = ChatOpenAI(
        model="scripted",
        base_url=scripted.base_url,
        api_key=SecretStr("sk-test"),
        max_retries=0,
        timeout=scaled(10),
    )
    with running(Orchestrator(settings=settings, model=model), api_key=KEY, worker=False) as svc:
        yield svc
    scripted.assert_done()


def test_reviewer_approves_in_the_browser_and_sees_the_answer(service: Service) -> None:
    from playwright.sync_api import sync_playwright

    service.orch.invoke("agent", EMAIL, thread_id="mail-1")
    service.orch.invoke("agent", "订单 A1001 到哪了？", thread_id="done-1")
    outbox = service.orch.keys.outbox()
    with sync_playwright() as p:
        browser = browser_for(p)
        page = browser.new_page()
        page.goto(f"{service.url}/review")
        assert page.locator("a").all_inner_texts() == ["mail-1"]  # only threads at a gate
        page.click("text=mail-1")
        page.wait_for_selector(
            "pre.mermaid svg", timeout=scaled(30_000)
        )  # the graph rendered offline
        assert "Weekly report" in page.inner_text("#conversation")  # what the user asked
        args = page.inner_text("fieldset.call pre.args")
        assert '"to": "li@example.com"' in args and '"subject": "Weekly report"' in args
        assert page.locator("#steps li").count() >= 1
        assert service.orch.client.llen(outbox) == 0
        page.check("fieldset.call input[value=approve]")
        page.click("#submit")
        page.wait_for_selector("#answer", timeout=scaled(30_000))
        answer = page.inner_text("#answer")
        status = page.inner_text("#thread-status")
        browser.close()
    assert "Sent 'Weekly report' to li@example.com" in answer and status == "completed"
    assert service.orch.client.llen(outbox) == 1


def test_log_in_once_then_answer_two_calls_with_one_submit(
    keyed: Service, scripted: ScriptedOpenAI
) -> None:
    from playwright.sync_api import sync_playwright

    scripted.load(
        Reply(
            content="I will send both.",
            tool_calls=[
                call(
                    "send_email",
                    {"to": "li@example.com", "subject": "Plan", "body": "x" * 900},
                    id=HOSTILE,
                ),
                call(
                    "send_email",
                    {"to": "bo@example.com", "subject": "Plan", "body": "hi"},
                    id="call_2",
                ),
            ],
        ),
        Reply(content="Sent the plan to li; bo was not written to."),
    )
    waiting = keyed.orch.invoke("agent", "Send the plan to li and bo", thread_id="two-1")
    assert waiting.pending is not None and [c.id for c in waiting.pending.calls] == [
        HOSTILE,
        "call_2",
    ]
    source = httpx.get(f"{keyed.url}/review/two-1", headers={"x-api-key": KEY}).text
    assert HOSTILE not in source and html.escape(HOSTILE, quote=True) in source
    assert KEY not in source and "<script>" not in source  # no inline script at all
    urls: list[str] = []
    with sync_playwright() as p:
        browser = browser_for(p)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        page.on("request", lambda r: urls.append(r.url))
        page.goto(f"{keyed.url}/review")
        assert "/review/login" in page.url  # no key yet: asked for it once
        page.fill("input[name=api_key]", KEY)
        page.click("button[type=submit]")
        page.click("text=two-1")
        page.wait_for_selector("pre.mermaid svg", timeout=scaled(30_000))
        conversation = page.inner_text("#conversation")
        assert "Send the plan to li and bo" in conversation and "I will send both." in conversation
        assert page.locator("#conversation details summary").first.inner_text() == "more"
        calls = page.locator("fieldset.call")
        assert calls.count() == 2 and calls.nth(0).get_attribute("data-call") == HOSTILE
        assert HOSTILE in calls.nth(0).inner_text()  # shown as text, exactly
        calls.nth(0).locator("input[value=approve]").check()
        calls.nth(1).locator("input[value=reject]").check()
        calls.nth(1).locator("input.reason").fill("bo is not on this project")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "review-page.png"), full_page=True)
        page.click("#submit")
        page.wait_for_selector("#answer", timeout=scaled(30_000))
        assert page.inner_text("#thread-status") == "completed"
        assert KEY not in page.content()
        cookies = context.cookies()
        browser.close()
    assert all(KEY not in u for u in urls)
    assert sorted(c["name"] for c in cookies) == ["gw_review_session", "gw_session"]
    assert all(
        c["httpOnly"] and c["sameSite"] == "Strict" and KEY not in c["value"] for c in cookies
    )  # the login, and the session the answer's CSRF token binds to
    sent = [json.loads(m) for m in keyed.orch.client.lrange(keyed.orch.keys.outbox(), 0, -1)]
    assert [m["to"] for m in sent] == ["li@example.com"]
    told = [m["content"] for m in scripted.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("bo is not on this project" in t for t in told)


def test_review_pages_refuse_a_key_in_the_url_and_a_forged_cookie(keyed: Service) -> None:
    page = httpx.get(f"{keyed.url}/review?api_key={KEY}", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/review/login")
    forged = httpx.get(
        f"{keyed.url}/review", cookies={"gw_session": "e30.AAAA"}, follow_redirects=False
    )
    assert forged.status_code == 303
    wrong = httpx.post(
        f"{keyed.url}/review/login",
        content="api_key=nope&next=/review",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert wrong.status_code == 401 and "gw_session" not in wrong.headers.get("set-cookie", "")
    answer = httpx.post(f"{keyed.url}/review/x/answer", json={"resume": None})
    assert answer.status_code == 401


def test_the_login_cookie_does_not_answer_for_a_page_of_another_origin(keyed: Service) -> None:
    """Any origin may call the API (the CORS default), and SameSite=Strict lets another port
    of the same host send the cookie: a write from such a page must not count as logged in."""
    login = httpx.post(
        f"{keyed.url}/review/login",
        content=f"api_key={KEY}&next=/review",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    cookie = {"gw_session": login.cookies["gw_session"]}
    other = httpx.post(
        f"{keyed.url}/review/x/answer",
        json={"resume": None},
        cookies=cookie,
        headers={"origin": "http://127.0.0.1:1"},
    )
    assert other.status_code == 403  # refused for its origin before the cookie is read
    own = httpx.post(
        f"{keyed.url}/review/x/answer",
        json={"resume": None},
        cookies=cookie,
        headers={"origin": keyed.url},
    )
    assert own.status_code != 401  # let in: the thread's own answer (unknown here) decides


class Asked(TypedDict, total=False):
    name: str
    greeting: str


def build_asking(ctx: GraphContext) -> Graph:
    def ask(state: Asked) -> Asked:
        return {"name": str(interrupt({"question": "Whose birthday is it?"}))}

    def greet(state: Asked) -> Asked:
        return {"greeting": f"Happy birthday, {state['name']}!"}

    builder = StateGraph(Asked)
    builder.add_node("ask", ask)
    builder.add_node("greet", greet)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "greet")
    return builder.compile(checkpointer=ctx.checkpointer)


def test_any_other_interrupt_gets_a_json_answer_form(service: Service) -> None:
    from playwright.sync_api import sync_playwright

    service.orch.graphs.register("asking", build_asking, make_input=None)
    assert service.orch.invoke("asking", {}, thread_id="ask-1").status == "interrupted"
    with sync_playwright() as p:
        browser = browser_for(p)
        page = browser.new_page()
        page.goto(f"{service.url}/review/ask-1")
        assert "Whose birthday is it?" in page.inner_text("#generic")
        page.fill("#generic textarea.resume", '"Ada"')
        page.click("#generic button[type=submit]")
        page.wait_for_selector("text=completed", timeout=scaled(30_000))
        browser.close()
    assert service.orch.state("ask-1").values["greeting"] == "Happy birthday, Ada!"


def test_review_page_of_an_unknown_thread_is_404(service: Service) -> None:
    assert httpx.get(f"{service.url}/review/nope").status_code == 404
