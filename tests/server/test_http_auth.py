"""Auth and validation for every endpoint family of the HTTP service."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from tests.support.endpoints import ENDPOINTS

KEY = "test-key-7f3a9c"
REVIEW_PAGES = [
    "/review",
    "/review/t1",
    "/review/assets/mermaid.min.js",
    "/review/assets/review.js",
]


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), api_key=KEY, worker=False
    ) as svc:
        yield svc


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_every_endpoint_needs_the_key_and_reveals_nothing(
    service: Service, method: str, path: str, body: dict | None
) -> None:
    with httpx.Client(base_url=service.url) as http:
        for headers in ({}, {"x-api-key": "wrong"}, {"x-api-key": KEY[:-1]}):
            r = http.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (path, headers, r.text)
            assert r.json() == {"detail": "missing or wrong API key"}
        r = http.request(method, path, json=body, headers={"x-api-key": KEY})
        # With the key the request reaches its handler: found or not, never a server error.
        assert r.status_code < 500, (path, r.status_code, r.text)
        assert r.status_code != 401 and "missing or wrong API key" not in r.text


@pytest.mark.parametrize("path", REVIEW_PAGES)
def test_review_pages_send_a_visitor_without_the_key_to_log_in(service: Service, path: str) -> None:
    with httpx.Client(base_url=service.url) as http:
        for headers in ({}, {"x-api-key": "wrong"}):
            r = http.get(path, headers=headers)
            assert r.status_code == 303 and r.headers["location"] == f"/review/login?next={path}"
            assert "mermaid" not in r.text and "t1" not in r.text.replace(path, "")
        assert http.get(path, headers={"x-api-key": KEY}).status_code in (200, 404)
        assert http.post("/review/t1/answer", json={"resume": None}).status_code == 401


def test_only_ok_needs_no_key_and_the_api_is_documented_behind_it(service: Service) -> None:
    with httpx.Client(base_url=service.url) as http:
        assert http.get("/ok").json() == {"ok": True}
        assert (
            http.get("/openapi.json", params={"api_key": KEY}).status_code == 401
        )  # no query keys
        assert http.get("/health", headers={"x-api-key": KEY}).status_code == 200
        spec = http.get("/openapi.json", headers={"x-api-key": KEY}).json()
    assert {"/threads/{thread_id}/runs/wait", "/assistants/search", "/review/{thread_id}"} <= set(
        spec["paths"]
    )
    assert "RunCreate" in spec["components"]["schemas"]


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/assistants/search", {"limit": 0}, "limit"),
        ("POST", "/threads", {"metadata": "not an object"}, "metadata"),
        ("POST", "/threads/search", {"limit": "many"}, "limit"),
        ("POST", "/threads/search", {"status": "sleeping"}, "status"),
        ("POST", "/threads/t1/history", {"limit": -1}, "limit"),
        ("POST", "/threads/t1/runs/wait", {"input": {"goal": "x"}}, "assistant_id"),
        ("POST", "/threads/t1/runs/wait", {"assistant_id": 5}, "assistant_id"),
        (
            "POST",
            "/threads/t1/runs",
            {"assistant_id": "agent", "stream_mode": "loud"},
            "stream_mode",
        ),
        (
            "POST",
            "/threads/t1/runs/stream",
            {"assistant_id": "agent", "multitask_strategy": "shout"},
            "multitask_strategy",
        ),
    ],
)
def test_bad_payloads_get_422_naming_the_field(
    service: Service, method: str, path: str, body: dict, field: str
) -> None:
    with httpx.Client(base_url=service.url, headers={"x-api-key": KEY}) as http:
        r = http.request(method, path, json=body)
    assert r.status_code == 422, r.text
    assert field in [str(part) for err in r.json()["detail"] for part in err["loc"]]


def test_unknown_things_are_404_and_user_errors_400(service: Service) -> None:
    with httpx.Client(base_url=service.url, headers={"x-api-key": KEY}) as http:
        assert http.get("/assistants/nope").status_code == 404
        assert http.get("/threads/nope").status_code == 404
        assert (
            http.post(
                "/threads/nope/runs/wait", json={"assistant_id": "agent", "input": {"goal": "x"}}
            ).status_code
            == 404
        )
        tid = http.post("/threads", json={}).json()["thread_id"]
        assert http.post("/threads", json={"thread_id": tid}).status_code == 409  # as the reference
        assert (
            http.post("/threads", json={"thread_id": tid, "if_exists": "do_nothing"}).status_code
            == 200
        )
        r = http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "nope", "input": {"goal": "x"}}
        )
        assert r.status_code == 422 and "Invalid assistant: 'nope'" in r.json()["detail"]  # as the
        assert "registered graphs: agent" in r.json()["detail"]  # reference: no such graph name
        gone = "00000000-0000-4000-8000-00000000dead"
        r = http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": gone, "input": {"goal": "x"}}
        )
        assert r.status_code == 404 and f"Assistant {gone} not found" in r.json()["detail"]
        r = http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "agent", "command": {"resume": {}}}
        )
        assert r.status_code == 404 and "no thread" in r.json()["detail"]
        assert http.get(f"/threads/{tid}/runs/nope").status_code == 404
