"""`/store` over HTTP: TTL, refresh, query and the reference's error codes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


def test_items_with_a_ttl_expire_in_redis_and_text_queries_match(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    sdk.store.put_item(["notes"], "a", {"text": "redis streams are fast"}, ttl=1)  # minutes
    sdk.store.put_item(["notes"], "b", {"text": "postgres is elsewhere"})
    ttls = [
        service.orch.client.ttl(k)
        for k in service.orch.client.scan_iter(f"{service.orch.keys.prefix}:store:*")
    ]
    assert any(0 < t <= 60 for t in ttls)  # the item with a TTL
    found = sdk.store.search_items(["notes"], query="redis streams")
    assert found["items"][0]["key"] == "a"
    item = sdk.store.get_item(["notes"], "a", refresh_ttl=True)
    assert item is not None and item["value"] == {"text": "redis streams are fast"}


def test_bad_namespaces_and_missing_keys_get_the_reference_codes(service: Service) -> None:
    with httpx.Client(base_url=service.url) as http:
        bad = http.put("/store/items", json={"namespace": ["a.b"], "key": "k", "value": {}})
        assert bad.status_code == 422 and "without periods" in bad.text
        assert http.get("/store/items", params={"namespace": "a"}).status_code == 400
        assert http.post("/store/namespaces", json={"prefix": [""]}).status_code == 422
        assert http.get("/store/items", params={"namespace": "a", "key": "none"}).json() is None
        nul = {"namespace": ["a\x00b"], "key": "k"}  # the store's own refusal: the reference's 400
        assert http.request("DELETE", "/store/items", json=nul).status_code == 400
        assert http.put("/store/items", json={**nul, "value": {}}).status_code == 400
        assert (
            http.put(
                "/store/items", json={"namespace": ["langgraph"], "key": "k", "value": {}}
            ).status_code
            == 400
        )  # LangGraph's reserved root
        empty = http.put("/store/items", json={"namespace": [], "key": "", "value": {}})
        assert empty.status_code == 422 and "cannot be empty" in empty.text  # the fuzzer's 500
        forever = {"namespace": ["a"], "key": "k", "value": {}, "ttl": 5e16}
        assert http.put("/store/items", json=forever).status_code == 422
        assert http.put("/store/items", json={**forever, "ttl": -1e-15}).status_code == 422
        assert (
            http.put("/store/items", json={**forever, "ttl": 1e-15}).status_code == 204
        )  # a second
        assert 0 < service.orch.client.ttl(service.orch.store.layout.item(("a",), "k")) <= 1
        assert (
            http.post("/threads", json={"ttl": {"ttl": 5e16}}).status_code == 422
        )  # Redis refuses it
