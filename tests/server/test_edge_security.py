"""Authorization at the edges, over HTTP with the SDK: a handler decides on the value the route
acts on, assistants are isolated like threads, and a thread id is created by one user only."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import Auth, get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from tests.support import auth_owner, auth_three

OWNED: dict[str, set[str]] = {"alice": set(), "bob": set()}  # the thread ids each user holds
SEEN: list[dict[str, Any]] = []  # the values the update handler was shown

by_id = Auth()  # a handler that allows an update only on a thread id the caller holds


@by_id.authenticate
async def by_token(authorization: str | None) -> str:
    return auth_owner.TOKENS[(authorization or "").removeprefix("Bearer ")]


@by_id.on.threads.update
async def own_ids_only(ctx: Auth.types.AuthContext, value: Auth.types.ThreadsUpdate) -> bool:
    SEEN.append(dict(value))
    return str(value.get("thread_id")) in OWNED[ctx.user.identity]


@by_id.on.threads
async def everything_else(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    return True


def sdk(service: Service, token: str) -> SyncLangGraphClient:
    return get_sync_client(
        url=service.url, api_key=None, headers={"Authorization": f"Bearer {token}"}
    )


def status_of(call: Callable[[], Any]) -> int:
    try:
        call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def cron_id(created: Any) -> str:
    """The id of a cron the SDK created (its return type names a run's fields)."""
    return str(created["cron_id"])


@pytest.fixture
def by_id_service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), auth=by_id) as svc:
        yield svc


def test_a_body_thread_id_cannot_stand_in_for_the_path_one_in_a_handler(
    by_id_service: Service,
) -> None:
    """Bob's PATCH of alice's thread naming his own id in the body: the handler is shown
    alice's id (the one the route updates) and refuses; her metadata is untouched."""
    alice, bob = sdk(by_id_service, "token-alice"), sdk(by_id_service, "token-bob")
    hers, his = str(uuid.uuid4()), str(uuid.uuid4())
    OWNED["alice"].add(hers)
    OWNED["bob"].add(his)
    alice.threads.create(thread_id=hers, metadata={"topic": "salary"})
    bob.threads.create(thread_id=his)
    spoofed = {"thread_id": his, "metadata": {"topic": "bob was here"}}
    answer = bob.http.client.patch(f"/threads/{hers}", json=spoofed)
    assert answer.status_code == 403, answer.text
    assert SEEN[-1] == {"thread_id": hers, "metadata": {"topic": "bob was here"}}
    assert (alice.threads.get(hers)["metadata"] or {})["topic"] == "salary"
    assert status_of(lambda: bob.threads.update(his, metadata={"topic": "his"})) == 200


@pytest.fixture
def isolated(settings: Settings) -> Iterator[Service]:
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    with running(orch, auth=auth_owner.only_authentication) as svc:
        yield svc


def test_a_malformed_store_body_is_a_422_naming_the_field_not_a_500(isolated: Service) -> None:
    alice = sdk(isolated, "token-alice")
    answer = alice.http.client.put("/store/items", json={"namespace": 5, "key": "k", "value": {}})
    assert answer.status_code == 422, answer.text
    assert "namespace" in answer.text


def test_assistants_are_isolated_per_user_like_threads_by_default(isolated: Service) -> None:
    """With authentication alone: bob neither sees, changes nor deletes alice's assistant,
    and deleting his own leaves her crons on hers alone."""
    alice, bob = sdk(isolated, "token-alice"), sdk(isolated, "token-bob")
    hers = alice.assistants.create("agent", name="hers")["assistant_id"]
    his = bob.assistants.create("agent", name="his")["assistant_id"]
    assert status_of(lambda: bob.assistants.get(hers)) == 404
    assert status_of(lambda: bob.assistants.update(hers, metadata={"x": 1})) == 404
    assert status_of(lambda: bob.assistants.delete(hers)) == 404
    assert hers not in {a["assistant_id"] for a in bob.assistants.search(limit=100)}
    assert his in {a["assistant_id"] for a in bob.assistants.search(limit=100)}
    mine = bob.threads.create()["thread_id"]
    assert status_of(lambda: bob.runs.create(mine, hers, input={"goal": "hi"})) == 404
    assert status_of(lambda: bob.crons.create(hers, schedule="0 0 1 1 *")) == 404
    batch = [{"thread_id": mine, "assistant_id": hers, "input": {"goal": "hi"}}]
    assert status_of(lambda: bob.runs.create_batch(batch)) == 404  # type: ignore[arg-type]
    assert bob.runs.list(mine) == []
    shared = [
        a
        for a in alice.assistants.search(graph_id="agent", limit=100)
        if (a["metadata"] or {}).get("created_by") == "system"
    ]
    assert shared, "the graphs' system assistants stay visible to every user"
    system = shared[0]["assistant_id"]
    thread = alice.threads.create()["thread_id"]
    cron = cron_id(
        alice.crons.create_for_thread(thread, system, schedule="0 0 1 1 *", input={"goal": "hi"})
    )
    assert status_of(lambda: bob.assistants.delete(system)) in (403, 404)
    assert cron in {c["cron_id"] for c in alice.crons.search(limit=100)}


def test_two_users_creating_the_same_thread_id_at_once_exactly_one_wins(isolated: Service) -> None:
    alice, bob = sdk(isolated, "token-alice"), sdk(isolated, "token-bob")
    for _ in range(10):
        tid = str(uuid.uuid4())
        answers: dict[str, int] = {}
        start = threading.Barrier(2)

        def create(
            name: str,
            client: SyncLangGraphClient,
            tid: str = tid,
            answers: dict[str, int] = answers,
            start: threading.Barrier = start,
        ) -> None:
            start.wait()
            answers[name] = status_of(lambda: client.threads.create(thread_id=tid))

        racers = [
            threading.Thread(target=create, args=(n, c))
            for n, c in (("alice", alice), ("bob", bob))
        ]
        for r in racers:
            r.start()
        for r in racers:
            r.join()
        assert sorted(answers.values()) == [200, 409], answers
        winner = "alice" if answers["alice"] == 200 else "bob"
        owner = ((alice if winner == "alice" else bob).threads.get(tid)["metadata"] or {})["owner"]
        assert owner == winner


def test_deleting_an_assistant_leaves_the_crons_the_caller_may_not_delete(
    settings: Settings,
) -> None:
    """Under the three users' handlers bob runs a cron on alice's assistant; her deleting the
    assistant deletes her own cron on it, not his."""
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), auth=auth_three.auth
    ) as svc:
        alice, bob = sdk(svc, "token-alice"), sdk(svc, "token-bob")
        hers = alice.assistants.create("agent", name="hers")["assistant_id"]
        his_cron = cron_id(bob.crons.create(hers, schedule="0 0 1 1 *", input={"goal": "hi"}))
        her_cron = cron_id(alice.crons.create(hers, schedule="0 0 1 1 *", input={"goal": "hi"}))
        alice.assistants.delete(hers)
        assert his_cron in {c["cron_id"] for c in bob.crons.search(limit=100)}
        assert her_cron not in {c["cron_id"] for c in alice.crons.search(limit=100)}


EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'
EVIL = "http://evil.example"


@pytest.fixture
def open_server(settings: Settings) -> Iterator[Service]:
    """A server as `graphwright serve` starts by default: no API key, no custom auth."""
    with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
        yield svc


def plain(service: Service, **headers: str) -> SyncLangGraphClient:
    return get_sync_client(url=service.url, api_key=None, headers=headers)


def test_a_default_server_refuses_foreign_origins_and_rebound_host_names(
    open_server: Service,
) -> None:
    """No API key: a page of another origin neither reads threads nor starts a run, and a
    DNS-rebinding page (the server reached by the attacker's name) gets nothing; API clients
    (no Origin) and the server's own origin are served."""
    own = plain(open_server)
    tid = own.threads.create(metadata={"topic": "salary"})["thread_id"]
    foreign, rebound = plain(open_server, Origin=EVIL), plain(open_server, Host="evil.example")
    for client in (foreign, rebound):
        assert status_of(lambda c=client: c.threads.search()) == 403
        assert status_of(lambda c=client: c.threads.get(tid)) == 403
        assert status_of(lambda c=client: c.runs.create(tid, "agent", input={"goal": "hi"})) == 403
    assert own.runs.list(tid) == []
    assert plain(open_server, Origin=open_server.url).threads.get(tid)["thread_id"] == tid
    local = open_server.url.replace("127.0.0.1", "localhost")
    assert plain(open_server, Host=local.removeprefix("http://")).threads.get(tid)
    preflight = httpx.options(
        f"{open_server.url}/threads/search",
        headers={"Origin": EVIL, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.headers["access-control-allow-origin"] == "*"  # as the reference


def test_a_configured_host_name_and_a_named_origin_are_served(settings: Settings) -> None:
    named = settings.model_copy(
        update={"allowed_hosts": "graphs.internal", "cors_origins": "http://ui.internal"}
    )
    with running(Orchestrator(settings=named, model=OfflineChatModel())) as svc:
        assert plain(svc, Host="graphs.internal").threads.search() == []
        assert plain(svc, Origin="http://ui.internal").threads.search() == []
        assert status_of(lambda: plain(svc, Host="graphs.evil").threads.search()) == 403


def test_a_review_answer_needs_the_csrf_token_of_the_pages_session(open_server: Service) -> None:
    """Same origin, no API key: an answer without the token its page carries is refused and
    the gate stays pending; with the page's token and session it resumes the run."""
    own = plain(open_server)
    tid = own.threads.create()["thread_id"]
    gate = own.runs.wait(tid, "agent", input={"goal": EMAIL})["__interrupt__"][0]["value"]
    call = gate["calls"][0]
    resume = {"resume": {call["id"]: {"action": "approve", "digest": call["digest"]}}}
    http = httpx.Client(base_url=open_server.url, headers={"Origin": open_server.url})
    assert http.post(f"/review/{tid}/answer", json=resume).status_code == 403
    other = httpx.Client(base_url=open_server.url)
    other.get(f"/review/{tid}")  # another browser's session: its token is not this one's
    page = http.get(f"/review/{tid}")
    token = page.text.split('id="csrf" data-token="')[1].split('"')[0]
    stolen = other.post(f"/review/{tid}/answer", json=resume, headers={"x-csrf-token": token})
    assert stolen.status_code == 403
    assert own.threads.get(tid)["status"] == "interrupted"
    done = http.post(f"/review/{tid}/answer", json=resume, headers={"x-csrf-token": token})
    assert done.status_code == 200, done.text
    assert own.threads.get(tid)["status"] == "idle"


def test_serve_binds_to_loopback_unless_told_otherwise() -> None:
    import inspect

    from graphwright import cli

    assert inspect.signature(cli.serve).parameters["host"].default.default == "127.0.0.1"
