"""Custom auth with LangGraph's `Auth` API: one user cannot see, resume, cancel or delete
another user's threads and runs (404, nothing revealed), through the Python SDK."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import Auth, get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.server.app import create_app
from graphwright.server.auth.authority import load_auth
from graphwright.server.background.cron_runs import fire_for
from graphwright.server.records.cron_store import CronStore
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from tests.support import auth_owner
from tests.support.endpoints import ENDPOINTS
from tests.support.paths import ROOT, SUPPORT

# Slow: the JS SDK in Node against two users' tokens
pytestmark = pytest.mark.slow

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def sdk(service: Service, token: str) -> SyncLangGraphClient:
    return get_sync_client(
        url=service.url, api_key=None, headers={"Authorization": f"Bearer {token}"}
    )


@pytest.fixture(params=["docs_handlers", "default_isolation"])
def service(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Service]:
    auth = auth_owner.auth if request.param == "docs_handlers" else auth_owner.only_authentication
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), auth=auth) as svc:
        yield svc


def refused(call: Callable[[], Any]) -> httpx.Response:
    with pytest.raises(httpx.HTTPStatusError) as caught:
        result = call()
        if not isinstance(result, dict | list):
            list(result)  # a stream raises when it is read
    return caught.value.response


def test_one_user_cannot_reach_another_users_threads_or_runs(service: Service) -> None:
    alice, bob = sdk(service, "token-alice"), sdk(service, "token-bob")
    thread = alice.threads.create(metadata={"topic": "salary review"})
    tid = thread["thread_id"]
    assert thread["metadata"]["owner"] == "alice"
    gate = alice.runs.wait(tid, "agent", input={"goal": EMAIL})["__interrupt__"][0]["value"][
        "calls"
    ][0]
    (run,) = alice.runs.list(tid)
    rid = run["run_id"]
    resume = {"resume": {gate["id"]: {"action": "approve", "digest": gate["digest"]}}}
    unknown = refused(lambda: bob.threads.get("no-such-thread"))

    attempts: dict[str, Callable[[], Any]] = {
        "read": lambda: bob.threads.get(tid),
        "state": lambda: bob.threads.get_state(tid),
        "history": lambda: bob.threads.get_history(tid),
        "list runs": lambda: bob.runs.list(tid),
        "get run": lambda: bob.runs.get(tid, rid),
        "join": lambda: bob.runs.join(tid, rid),
        "resume": lambda: bob.runs.wait(tid, "agent", command=resume),
        "new run": lambda: bob.runs.create(tid, "agent", input={"goal": "hi"}),
        "stream": lambda: bob.runs.stream(tid, "agent", input={"goal": "hi"}),
        "join stream": lambda: bob.runs.join_stream(tid, rid),
        "cancel": lambda: bob.runs.cancel(tid, rid),
        "delete run": lambda: bob.runs.delete(tid, rid),
        "delete": lambda: bob.threads.delete(tid),
    }
    for what, attempt in attempts.items():
        response = refused(attempt)
        assert response.status_code == 404, (what, response.text)
        assert "salary" not in response.text and gate["id"] not in response.text, what
        assert response.json()["detail"] == unknown.json()["detail"].replace("no-such-thread", tid)
    bob.runs.cancel_many(status="all")  # cancels none of alice's runs
    assert alice.runs.get(tid, rid)["status"] == run["status"]
    assert [t["thread_id"] for t in bob.threads.search()] == []
    assert [t["thread_id"] for t in bob.threads.search(metadata={"owner": "alice"})] == []

    assert [t["thread_id"] for t in alice.threads.search()] == [tid]
    assert alice.threads.get(tid)["status"] == "interrupted"
    done = alice.runs.wait(tid, "agent", command=resume)
    assert "Sent 'Weekly report'" in done["answer"]
    assert {r["metadata"].get("user_id") for r in alice.runs.list(tid)} <= {"alice", None}
    alice.threads.delete(tid)
    assert refused(lambda: alice.threads.get(tid)).status_code == 404


def every_route(orch: Orchestrator) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every documented operation (ids filled in) and the documentation itself; not `/ok` and
    `/metrics`, open to probes and scrapers as the reference's are
    (tests/server/test_metrics.py)."""
    paths = create_app(orch).openapi()["paths"]
    routes = [
        (method.upper(), re.sub(r"\{[^}]+\}", "t1", path), {} if method == "post" else None)
        for path, operations in paths.items()
        for method in operations
        if path not in ("/ok", "/metrics")
    ]
    return [
        *routes,
        ("GET", "/openapi.json", None),
        ("GET", "/docs", None),
        ("GET", "/redoc", None),
    ]


def test_every_route_but_ok_is_401_without_a_valid_token(service: Service) -> None:
    routes = every_route(service.orch)
    assert len(routes) >= len(ENDPOINTS) and ("GET", "/openapi.json", None) in routes
    with httpx.Client(base_url=service.url) as http:
        assert http.get("/ok").status_code == 200
        for method, path, body in routes:
            if path.startswith("/review"):  # its own login: the signed cookie (test_review_page)
                continue
            for headers in ({}, {"Authorization": "Bearer token-mallory"}):
                r = http.request(method, path, json=body, headers=headers)
                assert r.status_code == 401, (path, headers, r.text)
                assert r.json() == {"detail": "Invalid token"}


def test_a_false_handler_is_403_and_a_filtering_one_hides_assistants(settings: Settings) -> None:
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()),
        auth=auth_owner.forbidding,
        worker=False,
    ) as svc:
        client = get_sync_client(url=svc.url, api_key=None)
        tid = client.threads.create()["thread_id"]
        assert refused(lambda: client.threads.delete(tid)).status_code == 403
        assert client.threads.get(tid)["thread_id"] == tid
        assert client.assistants.search() == []  # the assistants handler's filter hides them
        assert refused(lambda: client.assistants.get("agent")).status_code == 404


def test_the_auth_object_loads_from_a_file_path_or_a_module() -> None:
    assert load_auth("auth_owner.py:auth", base=SUPPORT) is not auth_owner.auth  # a fresh module
    assert isinstance(load_auth("auth_owner.py:auth", base=SUPPORT), Auth)
    assert load_auth("tests.support.auth_owner:forbidding") is auth_owner.forbidding


def test_the_js_sdk_sees_the_same_isolation(settings: Settings) -> None:
    node_sdk = subprocess.run(
        [str(ROOT / "scripts" / "node-sdk")],
        capture_output=True,
        text=True,
        timeout=scaled(600),
        check=True,
    ).stdout.strip()
    script = (SUPPORT / "node" / "isolation.mjs").read_text()
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), auth=auth_owner.auth
    ) as svc:
        done = subprocess.run(
            ["node", "--input-type=module", "-", svc.url],
            input=script,
            cwd=node_sdk,
            capture_output=True,
            text=True,
            timeout=scaled(120),
            check=False,
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["owner"] == "alice"
    for what in (
        "read",
        "state",
        "history",
        "listRuns",
        "getRun",
        "join",
        "resume",
        "stream",
        "cancel",
        "delete",
    ):
        assert seen[what] == 404, (what, seen[what])
    assert seen["bobSearch"] == [] and seen["aliceSearch"] == [seen["tid"]]
    assert "Sent 'Weekly report'" in seen["aliceResume"]


NEVER = "0 0 1 1 *"  # once a year: no cron of these tests fires while they run


def test_one_user_cannot_reach_another_users_store_items(service: Service) -> None:
    alice, bob = sdk(service, "token-alice"), sdk(service, "token-bob")
    alice.store.put_item(["notes"], "n1", {"text": "salary review"})
    assert alice.store.get_item(["notes"], "n1")["value"] == {"text": "salary review"}
    assert alice.store.get_item(["notes"], "n1")["namespace"] == ["alice", "notes"]

    for namespace in (["notes"], ["alice", "notes"]):  # bob's own namespace, or aimed at alice's
        assert bob.store.get_item(namespace, "n1") is None, namespace
        bob.store.put_item(namespace, "n1", {"text": "overwritten"})
        bob.store.delete_item(namespace, "n1")
        found = bob.store.search_items(namespace)["items"]
        assert "salary" not in json.dumps(found), namespace
    assert bob.store.search_items(["alice"], filter={"text": "salary review"})["items"] == []
    assert all(ns[0] == "bob" for ns in bob.store.list_namespaces()["namespaces"])
    assert all(ns[0] == "bob" for ns in bob.store.list_namespaces(prefix=["alice"])["namespaces"])

    assert alice.store.get_item(["notes"], "n1")["value"] == {"text": "salary review"}
    (item,) = alice.store.search_items(["notes"], filter={"text": "salary review"})["items"]
    assert item["key"] == "n1" and ["alice", "notes"] in alice.store.list_namespaces()["namespaces"]
    alice.store.delete_item(["notes"], "n1")
    assert alice.store.get_item(["notes"], "n1") is None


def test_one_user_cannot_reach_another_users_crons(service: Service) -> None:
    alice, bob = sdk(service, "token-alice"), sdk(service, "token-bob")
    tid = alice.threads.create()["thread_id"]
    cron = alice.crons.create("agent", schedule=NEVER, input={"goal": "salary review"})
    on_thread = alice.crons.create_for_thread(tid, "agent", schedule=NEVER, input={"goal": "hi"})
    cid = cron["cron_id"]
    assert cron["metadata"]["owner"] == "alice" and cron["user_id"] == "alice"
    unknown = refused(lambda: bob.http.get("/runs/crons/00000000-0000-0000-0000-000000000000"))
    assert unknown.status_code == 404

    attempts: dict[str, Callable[[], Any]] = {
        "get": lambda: bob.http.get(f"/runs/crons/{cid}"),
        "update": lambda: bob.crons.update(cid, schedule="* * * * *"),
        "delete": lambda: bob.crons.delete(cid),
        "delete thread cron": lambda: bob.crons.delete(on_thread["cron_id"]),
        "cron on her thread": lambda: bob.crons.create_for_thread(tid, "agent", schedule=NEVER),
    }
    for what, attempt in attempts.items():
        response = refused(attempt)
        assert response.status_code == 404, (what, response.text)
        assert "salary" not in response.text, what
    assert bob.crons.search() == [] and bob.crons.count() == 0
    assert bob.crons.search(metadata={"owner": "alice"}) == []
    assert bob.crons.search(thread_id=tid) == []

    mine = bob.crons.create("agent", schedule=NEVER)
    assert [c["cron_id"] for c in bob.crons.search()] == [mine["cron_id"]]
    assert {c["cron_id"] for c in alice.crons.search()} == {cid, on_thread["cron_id"]}
    assert alice.crons.count() == 2
    changed = alice.crons.update(cid, schedule="0 0 2 1 *", metadata={"label": "yearly"})
    assert changed["schedule"] == "0 0 2 1 *" and changed["metadata"]["owner"] == "alice"
    assert alice.http.get(f"/runs/crons/{cid}")["metadata"]["label"] == "yearly"
    alice.crons.delete(cid)
    assert refused(lambda: alice.http.get(f"/runs/crons/{cid}")).status_code == 404


def test_the_js_sdk_sees_the_same_store_and_cron_isolation(settings: Settings) -> None:
    node_sdk = subprocess.run(
        [str(ROOT / "scripts" / "node-sdk")],
        capture_output=True,
        text=True,
        timeout=scaled(600),
        check=True,
    ).stdout.strip()
    script = (SUPPORT / "node" / "isolation_store_crons.mjs").read_text()
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()),
        auth=auth_owner.auth,
        worker=False,
    ) as svc:
        done = subprocess.run(
            ["node", "--input-type=module", "-", svc.url],
            input=script,
            cwd=node_sdk,
            capture_output=True,
            text=True,
            timeout=scaled(120),
            check=False,
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["aliceNamespace"] == ["alice", "notes"]
    assert seen["aliceValue"] == {"text": "salary review"} and "salary" not in seen["bobRead"]
    assert seen["bobFiltered"] == [] and all(ns[0] == "bob" for ns in seen["bobNamespaces"])
    assert seen["cronOwner"] == "alice"
    for what in ("getCron", "updateCron", "deleteCron", "deleteThreadCron", "cronOnHerThread"):
        assert seen[what] == 404, (what, seen[what])
    assert "salary" not in seen["getCronText"]
    assert seen["bobCrons"] == [] and seen["bobCount"] == 0
    assert seen["aliceCrons"] == seen["expectedCrons"] and seen["aliceCronStill"] == 200


def test_the_review_pages_show_each_user_only_their_own_threads(service: Service) -> None:
    alice, bob = sdk(service, "token-alice"), sdk(service, "token-bob")
    gated: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, client in (("alice", alice), ("bob", bob)):
        tid = client.threads.create()["thread_id"]
        call = client.runs.wait(tid, "agent", input={"goal": EMAIL})["__interrupt__"][0]["value"][
            "calls"
        ][0]
        gated[name] = (tid, call)
    (mine, call), (theirs, _) = gated["alice"], gated["bob"]
    as_alice = {"Authorization": "Bearer token-alice"}
    with httpx.Client(base_url=service.url, headers=as_alice) as http:
        listed = http.get("/review")
        assert listed.status_code == 200 and mine in listed.text and theirs not in listed.text
        assert http.get(f"/review/{mine}").status_code == 200
        assert http.get(f"/review/{theirs}").status_code == 404
        refused_answer = http.post(f"/review/{theirs}/answer", json={"resume": None})
        assert refused_answer.status_code == 404 and "Weekly" not in refused_answer.text
        assert httpx.get(f"{service.url}/review").status_code == 401
        answer = {call["id"]: {"action": "approve", "digest": call["digest"]}}
        done = http.post(f"/review/{mine}/answer", json={"resume": answer})
        assert done.status_code == 200 and done.json()["status"] == "success", done.text
    assert alice.threads.get(mine)["status"] == "idle"
    assert bob.threads.get(theirs)["status"] == "interrupted"
    assert {r["metadata"].get("owner") for r in alice.runs.list(mine)} == {"alice"}


def test_the_thread_a_users_cron_starts_is_theirs(service: Service) -> None:
    alice, bob = sdk(service, "token-alice"), sdk(service, "token-bob")
    cron = alice.crons.create(
        "agent", schedule=NEVER, input={"goal": "hi"}, on_run_completed="keep"
    )
    doc = CronStore(service.orch.client, service.orch.keys).find(cron["cron_id"])
    assert doc is not None
    run_id = str(uuid.uuid4())
    fire_for(service.orch)(doc, run_id, None)  # what a worker's scheduler does when it is due
    assert alice.threads.get(run_id)["metadata"]["owner"] == "alice"
    assert refused(lambda: bob.threads.get(run_id)).status_code == 404
    assert run_id not in [t["thread_id"] for t in bob.threads.search()]
