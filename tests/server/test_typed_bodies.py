"""Every API route's body is typed: a malformed one is a 422 whose `loc` names the field,
never a 500, with or without a custom `Auth` (whose handlers read the body); the store
bodies the fuzzer found first. Ids in the paths need not exist: the body is checked first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import running
from tests.support import auth_three

T = "00000000-0000-4000-8000-000000000001"  # a thread, run or cron id nobody created
EVERY_MINUTE = {"assistant_id": "agent", "schedule": "* * * * *"}

CASES: list[tuple[str, str, Any, str]] = [  # method, path, body, the field at fault
    ("POST", "/store/items/search", {"namespace_prefix": True, "offset": True}, "namespace_prefix"),
    ("POST", "/store/items/search", {"namespace_prefix": [{}]}, "namespace_prefix"),
    ("PUT", "/store/items", {"namespace": [None], "key": "", "value": {}}, "namespace"),
    ("DELETE", "/store/items", {"key": "", "namespace": [[None, None]]}, "namespace"),
    ("DELETE", "/store/items", {"namespace": ["a"]}, "key"),
    ("POST", "/store/namespaces", {"prefix": [{}]}, "prefix"),
    ("POST", "/threads/search", {"limit": "many"}, "limit"),
    ("PATCH", f"/threads/{T}", {"metadata": 3}, "metadata"),
    (
        "POST",
        f"/threads/{T}/runs/wait",
        {"assistant_id": "agent", "stream_mode": "x"},
        "stream_mode",
    ),
    ("POST", "/runs/batch", [{"assistant_id": 3}], "assistant_id"),
    ("POST", "/runs/cancel", {"status": "some"}, "status"),
    ("POST", "/assistants/search", {"limit": "x"}, "limit"),
    ("POST", "/runs/crons", {**EVERY_MINUTE, "end_time": "soon"}, "end_time"),
    ("POST", "/runs/crons", {**EVERY_MINUTE, "input": "a string"}, "input"),
    ("POST", f"/threads/{T}/runs/crons", {**EVERY_MINUTE, "config": {"tags": "x"}}, "config"),
    ("PATCH", f"/runs/crons/{T}", {"schedule": None}, "schedule"),
]


@pytest.fixture(params=["no-auth", "custom-auth"])
def api(request: pytest.FixtureRequest, settings: Settings) -> Iterator[httpx.Client]:
    custom = request.param == "custom-auth"
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    with (
        running(orch, worker=False, auth=auth_three.auth if custom else None) as svc,
        httpx.Client(
            base_url=svc.url,
            timeout=30,
            headers={"Authorization": "Bearer token-alice"} if custom else {},
        ) as http,
    ):
        yield http


def test_a_malformed_body_is_a_422_naming_its_field(api: httpx.Client) -> None:
    """One service per auth mode for all the cases (a service per case would cost seconds)."""
    wrong = []
    for method, path, body, field in CASES:
        answer = api.request(method, path, json=body)
        named = answer.status_code == 422 and any(
            field in error["loc"] for error in answer.json()["detail"]
        )
        if not named:
            wrong.append(f"{method} {path} {body}: {answer.status_code} {answer.text[:200]}")
    assert not wrong, "\n".join(wrong)


def test_deleting_an_item_without_a_namespace_deletes_nothing_as_the_reference(
    api: httpx.Client,
) -> None:
    api.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {"v": 1}})
    assert api.request("DELETE", "/store/items", json={"key": "k"}).status_code == 204
    assert api.get("/store/items", params={"namespace": "a", "key": "k"}).json()["value"] == {
        "v": 1
    }
