"""The `http` section of `langgraph.json` (a user's app beside the API, behind the same
auth; a mount prefix; resources switched off) and graphs whose state is each kind LangGraph
accepts, through runs, streams and `get_state`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.server.http.cors import cors_options
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from graphwright_errors import ConfigurationError
from tests.support.paths import SUPPORT

PROJECT = SUPPORT / "projects_http"
KEY = "test-key"
STATE_GRAPHS = ["typed_dict", "extensions_typed_dict", "dataclass_state", "pydantic_state"]


def orchestrator(path: Path, redis_url: str, prefix: str) -> Orchestrator:
    settings = Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    return Orchestrator.from_config(path, settings=settings, model=OfflineChatModel())


@pytest.fixture(scope="module")
def service(redis_server: Server) -> Iterator[Service]:
    url = redis_server.url
    with running(
        orchestrator(PROJECT / "langgraph.json", url, "httpproj"), api_key=KEY, worker=False
    ) as svc:
        yield svc


def test_the_users_app_is_served_beside_the_api_behind_the_same_key(service: Service) -> None:
    assert httpx.get(f"{service.url}/hello").status_code == 401
    assert httpx.get(f"{service.url}/hello", headers={"x-api-key": "wrong"}).status_code == 401
    ok = httpx.get(f"{service.url}/hello", headers={"x-api-key": KEY})
    assert ok.status_code == 200 and ok.json() == {"hello": "from the user's app"}
    api = httpx.post(f"{service.url}/assistants/search", json={}, headers={"x-api-key": KEY})
    assert api.status_code == 200 and {a["graph_id"] for a in api.json()} >= set(STATE_GRAPHS)


def test_assistants_are_named_by_the_compiled_graph_and_undescribed(service: Service) -> None:
    found = get_sync_client(url=service.url, api_key=KEY).assistants.search(limit=100)
    mine = {
        a["graph_id"]: (a["name"], a["description"]) for a in found if a["graph_id"] in STATE_GRAPHS
    }
    assert mine["dataclass_state"] == ("data graph", None)  # the graph's own name
    assert mine["typed_dict"] == ("typed_dict", None)  # LangGraph's default name: the graph id


@pytest.mark.parametrize("graph", STATE_GRAPHS)
def test_each_kind_of_state_runs_streams_and_reads(service: Service, graph: str) -> None:
    sdk = get_sync_client(url=service.url, api_key=KEY)
    tid = sdk.threads.create()["thread_id"]
    done = sdk.runs.wait(tid, graph, input={"items": ["a"], "count": 0})
    assert done == {"items": ["a", "step"], "count": 1}
    streamed = [
        p.data
        for p in sdk.runs.stream(tid, graph, input={"items": ["b"]}, stream_mode="values")
        if p.event == "values"
    ]
    assert streamed[-1]["items"] == ["a", "step", "b", "step"]
    assert sdk.threads.get_state(tid)["values"] == streamed[-1]
    with pytest.raises(httpx.HTTPStatusError) as refused:  # a wrong type: a clear 422, never 500
        sdk.runs.wait(tid, graph, input={"count": "many"})
    assert refused.value.response.status_code == 422
    assert sdk.threads.get_state(tid)["values"] == streamed[-1]  # and nothing is lost


def test_mount_prefix_switches_and_configurable_headers(
    redis_server: Server, tmp_path: Path
) -> None:
    for name in ("state_types.py", "extra_app.py"):
        shutil.copy(PROJECT / name, tmp_path / name)
    config = json.loads((PROJECT / "langgraph.json").read_text())
    config["graphs"]["headers"] = "./state_types.py:headers"
    config["http"] = {
        "mount_prefix": "/api",
        "disable_store": True,
        "configurable_headers": {"include": ["x-user-*"], "exclude": ["x-user-secret"]},
    }
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    with running(
        orchestrator(tmp_path / "langgraph.json", redis_server.url, "httppre"), worker=False
    ) as svc:
        assert httpx.post(f"{svc.url}/api/threads/search", json={}).status_code == 200
        assert httpx.post(f"{svc.url}/threads/search", json={}).status_code == 404
        assert httpx.post(f"{svc.url}/api/store/items/search", json={}).status_code == 404
        sent = {"x-user-id": "li", "x-user-secret": "s3", "x-other": "o"}
        done = httpx.post(
            f"{svc.url}/api/runs/wait",
            json={"assistant_id": "headers", "input": {}},
            headers=sent,
            timeout=scaled(30),
        )
        assert done.json()["items"] == ["x-user-id=li"]  # included, minus the excluded one


CORS_CASES = [  # (GRAPHWRIGHT_CORS_ORIGINS, http.cors, environment) -> origins, credentials
    (None, None, {}, ["*"], False),
    (
        None,
        None,
        {"CORS_ALLOW_ORIGINS": "https://a.test, https://b.test/"},
        ["https://a.test", "https://b.test"],
        True,
    ),
    (
        "https://mine.test",
        None,
        {"CORS_ALLOW_ORIGINS": "https://a.test"},
        ["https://mine.test"],
        True,
    ),
    (None, {"allow_origins": ["https://c.test"]}, {}, ["https://c.test"], None),
    (None, {"max_age": 60}, {"CORS_ALLOW_ORIGINS": "https://a.test"}, ["https://a.test"], None),
    (
        None,
        {"max_age": 60},
        {"CORS_CONFIG": '{"allow_origins": ["https://d.test"]}'},
        ["https://d.test"],
        None,
    ),
]


@pytest.mark.parametrize(("ours", "http_cors", "env", "origins", "credentials"), CORS_CASES)
def test_cors_options_follow_the_references_settings(
    ours: str | None,
    http_cors: dict[str, object] | None,
    env: dict[str, str],
    origins: list[str],
    credentials: bool | None,
) -> None:
    options = cors_options(ours, http_cors, env)
    assert options.get("allow_origins") == origins
    assert options.get("allow_credentials") == credentials


@pytest.mark.parametrize(
    "bad", [{"allow_origins": ["*"], "allow_credentials": True}, {"origins": ["x"]}]
)
def test_cors_settings_that_would_be_unsafe_or_are_misspelt_are_refused(
    bad: dict[str, object],
) -> None:
    with pytest.raises(ConfigurationError, match=r"http\.cors"):
        cors_options(None, bad, {})


@pytest.mark.parametrize("http_cors", [None, {"allow_origins": ["https://c.test"]}])
def test_private_network_preflights_are_answered_when_allow_private_network_is_set(
    http_cors: dict[str, object] | None,
) -> None:
    assert (
        cors_options(None, http_cors, {"ALLOW_PRIVATE_NETWORK": "true"})["allow_private_network"]
        is True
    )
    assert "allow_private_network" not in cors_options(None, http_cors, {})
