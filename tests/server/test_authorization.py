"""One authorization layer: assistants, crons, search, owners, webhooks, rate limits and
reserved namespaces each decided by the `Auth` handlers (or default isolation) the way
the Agent Server decides them, through the Python SDK against a served graphwright."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter
from langgraph.store.base import InvalidNamespaceError
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graphwright import Orchestrator
from graphwright.checkpoints.memory import Source
from graphwright.checkpoints.store import RedisStore
from graphwright.checkpoints.store_ops import Layout
from graphwright.offline import OfflineChatModel
from graphwright.server.auth import access
from graphwright.server.auth.authority import Authority
from graphwright.server.background.cron_runs import fire_for
from graphwright.server.errors import UnprocessableError
from graphwright.server.records.cron_store import CronStore
from graphwright.server.runs import webhooks
from graphwright.server.runs._completion import call_webhook
from graphwright.settings import Settings
from graphwright.testing.service import LOOPBACK, Service, running
from graphwright_errors import ConfigurationError, UserError
from tests.support import auth_owner, auth_three

NEVER = "0 0 1 1 *"


def sdk(service: Service, user: str) -> SyncLangGraphClient:
    return get_sync_client(
        url=service.url, api_key=None, headers={"Authorization": f"Bearer token-{user}"}
    )


def status_of(call: Callable[[], Any]) -> int:
    try:
        call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def serve(settings: Settings, auth: Any, **changes: Any) -> Any:
    tuned = settings.model_copy(update=changes) if changes else settings
    return running(Orchestrator(settings=tuned, model=OfflineChatModel()), auth=auth, worker=False)


@pytest.fixture
def three(settings: Settings) -> Iterator[Service]:
    with serve(settings, auth_three.auth) as svc:
        yield svc


def test_the_viewer_is_refused_every_assistant_write_and_owners_change_only_their_own(
    three: Service,
) -> None:
    alice, bob, viewer = (sdk(three, u) for u in ("alice", "bob", "viewer"))
    mine = alice.assistants.create("agent", name="alice's", metadata={"team": "a"})
    aid = mine["assistant_id"]
    assert mine["metadata"] == {"team": "a", "owner": "alice"}
    writes: dict[str, Callable[[], Any]] = {
        "create": lambda: viewer.assistants.create("agent", name="viewer's"),
        "update": lambda: viewer.assistants.update(aid, name="renamed"),
        "delete": lambda: viewer.assistants.delete(aid),
        "set latest": lambda: viewer.assistants.set_latest(aid, 1),
    }
    for what, write in writes.items():
        assert status_of(write) == 403, what
    assert viewer.assistants.get(aid)["name"] == "alice's"  # reads stay open to everyone
    assert viewer.assistants.count() == bob.assistants.count() >= 1
    assert status_of(lambda: bob.assistants.update(aid, name="bob's now")) == 404
    assert status_of(lambda: bob.assistants.delete(aid)) == 404
    assert status_of(lambda: bob.assistants.create("agent", assistant_id=aid)) == 409
    assert alice.assistants.update(aid, name="renamed")["name"] == "renamed"
    assert [v["version"] for v in alice.assistants.get_versions(aid)] == [2, 1]
    assert alice.assistants.set_latest(aid, 1)["name"] == "alice's"


def test_deleting_an_assistant_with_its_threads_deletes_only_the_callers_threads(
    three: Service,
) -> None:
    alice, bob = sdk(three, "alice"), sdk(three, "bob")
    aid = alice.assistants.create("agent")["assistant_id"]
    hers = alice.threads.create(metadata={"assistant_id": aid})["thread_id"]
    his = bob.threads.create(metadata={"assistant_id": aid})["thread_id"]
    alice.assistants.delete(aid, delete_threads=True)
    assert status_of(lambda: alice.threads.get(hers)) == 404
    assert bob.threads.get(his)["thread_id"] == his


def test_a_cron_runs_as_its_creator_whatever_user_id_it_names(three: Service) -> None:
    alice = sdk(three, "alice")
    cron = alice.crons.create(
        "agent",
        schedule=NEVER,
        input={"goal": "hi"},
        metadata={"user_id": "bob", "owner": "bob"},
        on_run_completed="keep",
    )
    assert cron["user_id"] == "alice" and cron["metadata"]["owner"] == "alice"
    doc = CronStore(three.orch.client, three.orch.keys).find(cron["cron_id"])
    assert doc is not None
    fire = fire_for(three.orch, Authority(auth=auth_three.auth))
    run_id = str(uuid.uuid4())
    fire(doc, run_id, None)  # what a worker's scheduler does when it is due
    (run,) = alice.runs.list(run_id)
    assert run["metadata"]["user_id"] == "alice" and run["metadata"]["owner"] == "alice"
    assert alice.threads.get(run_id)["metadata"]["owner"] == "alice"
    caller = run["kwargs"]["config"]["configurable"]  # as the reference's scheduler sets it
    assert (caller["langgraph_auth_user_id"], caller["user_id"]) == ("alice", "alice")
    assert caller["langgraph_auth_permissions"] == ["read", "write"]
    assert caller["langgraph_auth_user"]["identity"] == "alice"

    auth_three.REVOKED.add("alice")  # checked again at each fire, as its creator
    try:
        later = str(uuid.uuid4())
        with pytest.raises(UserError, match="may no longer start it"):
            fire(doc, later, None)
        assert three.orch.meta(later) == {}
    finally:
        auth_three.REVOKED.discard("alice")


def test_search_with_select_and_count_obey_a_contains_filter(settings: Settings) -> None:
    with serve(settings, auth_three.contains_auth) as svc:
        alice, bob = sdk(svc, "alice"), sdk(svc, "bob")
        his = bob.threads.create(metadata={"topic": "his"})["thread_id"]
        for _ in range(3):  # newer than his: a filter applied after the page would hide his
            alice.threads.create(metadata={"topic": "salary"})
        found = bob.threads.search(select=["thread_id", "values"], limit=1)
        assert found == [{"thread_id": his, "values": None}]
        assert bob.threads.search(limit=1)[0]["thread_id"] == his
        assert bob.threads.search(offset=1) == []
        assert bob.threads.count() == 1 and alice.threads.count() == 3
        assert bob.threads.count(metadata={"topic": "salary"}) == 0


@pytest.mark.parametrize(
    "auth",
    [auth_owner.only_authentication, auth_three.create_only],
    ids=["isolation only", "a create handler that leaves the owner"],
)
def test_a_client_supplied_owner_is_replaced_by_the_callers_identity(
    settings: Settings, auth: Any
) -> None:
    with serve(settings, auth) as svc:
        alice = get_sync_client(
            url=svc.url, api_key=None, headers={"Authorization": "Bearer token-alice"}
        )
        bob = get_sync_client(
            url=svc.url, api_key=None, headers={"Authorization": "Bearer token-bob"}
        )
        planted = alice.threads.create(metadata={"owner": "bob"})
        tid = planted["thread_id"]
        assert planted["metadata"]["owner"] == "alice"
        assert alice.threads.get(tid)["metadata"]["owner"] == "alice"
        assert bob.threads.search() == [] and bob.threads.count() == 0
        alice.threads.update(tid, metadata={"owner": "bob", "topic": "x"})
        assert alice.threads.get(tid)["metadata"] == {"owner": "alice", "topic": "x"}
        assert bob.threads.search() == []


def test_creating_a_thread_on_another_users_id_is_409_like_a_taken_id(three: Service) -> None:
    alice, bob = sdk(three, "alice"), sdk(three, "bob")
    tid = alice.threads.create(metadata={"topic": "salary"})["thread_id"]
    assert status_of(lambda: bob.threads.create(thread_id=tid)) == 409
    assert status_of(lambda: bob.threads.create(thread_id=tid, if_exists="do_nothing")) == 409
    assert status_of(lambda: alice.threads.create(thread_id=tid)) == 409
    assert alice.threads.create(thread_id=tid, if_exists="do_nothing")["thread_id"] == tid


def test_an_offset_past_every_rank_is_an_empty_page(three: Service) -> None:
    alice = sdk(three, "alice")
    alice.threads.create()
    assert alice.http.post("/threads/search", json={"offset": 2**63 - 1}) == []
    assert (
        alice.http.post(
            "/threads/search", json={"offset": 2**63 - 1, "metadata": {"owner": "alice"}}
        )
        == []
    )


@pytest.mark.parametrize("condition", [{"$foo": 1}, {"$in": ["a"]}, {"$gt": 3}, {"$gt": "b"}])
def test_a_store_filter_the_store_cannot_apply_is_400(
    three: Service, condition: dict[str, Any]
) -> None:
    alice = sdk(three, "alice")
    alice.store.put_item(["notes"], "k", {"text": "salary review"})
    code = status_of(lambda: alice.store.search_items(["notes"], filter={"text": condition}))
    assert code == 400
    assert alice.store.search_items(["notes"], filter={"text": "salary review"})["items"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://192.168.0.1/hook",
        "file:///etc/passwd",
        "http://0.0.0.0/hook",
    ],
)
def test_a_webhook_to_a_private_loopback_or_link_local_address_is_refused(url: str) -> None:
    with pytest.raises(UnprocessableError):
        webhooks.admit(url, "")


def test_a_listed_network_or_host_lets_a_webhook_through() -> None:
    webhooks.admit("http://127.0.0.1:9/hook", LOOPBACK)
    webhooks.admit("http://[::1]:9/hook", LOOPBACK)
    webhooks.admit("http://10.1.2.3/hook", "10.0.0.0/8")
    webhooks.admit("http://8.8.8.8/hook", "")  # public: allowed without listing


def test_the_service_refuses_a_loopback_webhook_unless_configured(settings: Settings) -> None:
    with serve(settings, auth_three.auth) as svc:
        code = status_of(
            lambda: sdk(svc, "alice").runs.create(
                None, "agent", input={"goal": "hi"}, webhook="http://127.0.0.1:9/hook"
            )
        )
        assert code == 422
        code = status_of(
            lambda: sdk(svc, "alice").crons.create(
                "agent", schedule=NEVER, webhook="http://169.254.169.254/latest"
            )
        )
        assert code == 422
    with serve(settings, auth_three.auth, webhook_allow=LOOPBACK) as svc:
        run = sdk(svc, "alice").runs.create(
            None, "agent", input={"goal": "hi"}, webhook="http://127.0.0.1:9/hook"
        )
        assert run["run_id"]


def test_a_webhook_url_never_appears_whole_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    secret = "s3cr3t-token-9f2"
    with caplog.at_level(logging.WARNING):
        assert not call_webhook(f"http://127.0.0.1:9/hook/{secret}?key={secret}", {})
        assert not call_webhook(f"http://127.0.0.1:9/hook/{secret}?key={secret}", {}, LOOPBACK)
    assert "127.0.0.1" in caplog.text and secret not in caplog.text


def test_a_webhook_goes_to_the_address_admitted_not_to_a_second_dns_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the host resolves to an allowed address when checked, then elsewhere.
    The call goes to the address checked, with the host kept in `Host`."""
    import http.server
    import socket
    import threading

    got: list[str] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            got.append(self.headers["Host"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1"])  # the first answer is allowed; any later one is not

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "hooks.example.test":
            return real(next(answers, "127.0.0.2"), *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    try:
        assert call_webhook(f"http://hooks.example.test:{port}/hook", {"run": 1}, "127.0.0.1/32")
    finally:
        server.shutdown()
        server.server_close()
    assert got == [f"hooks.example.test:{port}"]


def test_the_rate_limit_counts_each_run_of_a_batch_and_each_cron(settings: Settings) -> None:
    with serve(settings, auth_three.auth, run_rate_per_minute=0.01, run_burst=3) as svc:
        alice = sdk(svc, "alice")
        item = {"assistant_id": "agent", "input": {"goal": "hi"}}
        assert status_of(lambda: alice.http.post("/runs/batch", json=[item] * 4)) == 429
        assert len(alice.http.post("/runs/batch", json=[item] * 2)) == 2
        assert status_of(lambda: alice.crons.create("agent", schedule=NEVER)) == 200
        assert status_of(lambda: alice.crons.create("agent", schedule=NEVER)) == 429
        assert status_of(lambda: alice.runs.create(None, "agent", input={"goal": "hi"})) == 429
        assert status_of(lambda: sdk(svc, "bob").crons.create("agent", schedule=NEVER)) == 200


def test_a_user_named_memories_cannot_read_every_users_memories(settings: Settings) -> None:
    """Under isolation a user's namespaces start with their identity: a user named
    `memories` works in `("memories", ...)` of the users' store, where graphwright keeps
    nothing (its memories have a store of their own)."""
    with serve(settings, auth_owner.only_authentication) as svc:
        svc.orch.memory.remember(
            "user:alice", "fact", "salary", "wants a raise", Source(thread_id="t1")
        )
        auth_owner.TOKENS["token-memories"] = "memories"
        try:
            memories = get_sync_client(
                url=svc.url, api_key=None, headers={"Authorization": "Bearer token-memories"}
            )
            assert memories.store.search_items(["user:alice"])["items"] == []
            assert memories.store.get_item(["user:alice"], "salary") is None
            assert memories.store.list_namespaces()["namespaces"] == []
            memories.store.put_item(["user:alice"], "salary", {"v": 1})  # its own namespace
        finally:
            del auth_owner.TOKENS["token-memories"]
        assert [(r.key, r.value) for r in svc.orch.memories("alice")] == [
            ("salary", "wants a raise")
        ]
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        anyone = get_sync_client(url=svc.url, api_key=None)
        assert [i["namespace"] for i in anyone.store.search_items([])["items"]] == [
            ["memories", "user:alice"]
        ]  # the item the user named memories put, nothing else


def test_a_dotted_label_never_reads_the_namespace_of_two_labels(settings: Settings) -> None:
    store = RedisStore(Orchestrator(settings=settings).client, prefix=f"{settings.key_prefix}:s")
    store.put(("a", "b"), "k", {"v": "nested"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": "dotted"})
    for read in (lambda: store.get(("a.b",), "k"), lambda: store.search(("a.b",))):
        with pytest.raises(InvalidNamespaceError):
            read()
    assert store.list_namespaces() == [("a", "b")]
    layout = Layout(prefix="p")  # and below the store's own check, the keys differ too
    assert layout.ns(("a.b",)) != layout.ns(("a", "b"))
    assert layout.item(("a", "b"), "k") == "p:{a.b}:item:k"


def test_a_resource_route_that_names_no_action_stops_the_service_starting() -> None:
    router = APIRouter()

    @router.get("/threads/{thread_id}/open")
    def open_route(thread_id: str) -> str:
        return thread_id

    with pytest.raises(ConfigurationError, match="open"):
        access.audit(list(router.routes))
