"""The differential protocol test: the same SDK call sequences (tests/support/protocol_scenarios.py)
against `langgraph dev` and `graphwright serve`, sync and async clients, compared call by
call: every key of every body and stream event, recursively and in both directions, values
after masking ids and times (tests/support/differential.py `differences`).

The parametrization below is the table (tests/differential/PROTOCOL.md, rewritten from a run
with `GW_WRITE_TABLE=1`). DELIBERATE lists calls that differ on purpose, EVERYWHERE the
answer paths that do wherever they occur; OPEN would list paths not answered like the
reference yet (shown in the table, not asserted). Every other difference fails the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from graphwright.testing.fixed_openai import serving
from graphwright.testing.redis_servers import Server
from tests.support.differential import differences, mask
from tests.support.protocol_graphs import CHAT_URL_ENV
from tests.support.protocol_scenarios import SCENARIOS, Observation, run_scenario
from tests.support.protocol_servers import Blocking, graphwright_server, reference_server
from tests.support.thread_stream_view import PROTOCOL_NOTE, thread_stream_view

# Slow: the reference Agent Server (langgraph dev) answers beside ours
pytestmark = pytest.mark.slow

TABLE = Path(__file__).with_name("PROTOCOL.md")
# graphwright refuses a bad input with 422 before any run; the reference starts the run and
# fails it.
DELIBERATE = {
    (
        "inputs",
        "input of the wrong type",
    ): "graphwright checks the input against the graph's input schema: 422 before any run"
}
# Paths that differ on purpose wherever they occur (pattern -> why).
EVERYWHERE = {
    r"\.gw_fence: only graphwright": "graphwright's fencing token rides in the run's configurable",
    r"\.configurable\.__pregel_node_finished: only the reference": (
        "the reference's run record keeps a LangGraph-internal callback its worker put into the "
        "run's config (listed as null); graphwright's record keeps what the run was created with"
    ),
}
# Not answered like the reference yet (path pattern -> what is missing): none.
OPEN: dict[str, str] = {}
# /metrics: the labels the reference's OpenTelemetry exporter adds to every family (empty
# outside LangSmith's hosting), and its resource family; graphwright has neither.
DEPLOYMENT_LABELS = frozenset(
    {
        "project_id",
        "revision_id",
        "deployment_type",
        "otel_scope_name",
        "otel_scope_schema_url",
        "otel_scope_version",
    }
)
METRICS_ONLY_REFERENCE = frozenset({"target_info"})
# A2A: the reference's card offers its history-scope extension (graphwright answers with the
# whole context's history, the extension's default) and names its own version.
A2A_DELIBERATE = (
    r"^\$\.card\.capabilities\.extensions: only the reference$"
    r"|^\$\.card\.version: reference"
)
SYSTEM_NS = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")  # a graph's own assistant id
# graphwright's own graphs, registered beside the test's: assistants, and so MCP tools, too.
BUILT_IN_GRAPHS = frozenset({"agent", "orchestrator", "order_support"})
ASYNC_SCENARIOS = ["interrupt and resume", "messages-tuple", "raising graph", "joins"]
CASES = [(name, "sync") for name in SCENARIOS] + [(name, "async") for name in ASYNC_SCENARIOS]
RESULTS: dict[tuple[str, str, str], list[str]] = {}


@pytest.fixture(scope="session")
def chat_url() -> Iterator[str]:
    with serving() as url:
        os.environ[CHAT_URL_ENV] = url
        yield url


@pytest.fixture(scope="session")
def servers(chat_url: str, redis_session: Server) -> Iterator[tuple[str, str]]:
    with reference_server(chat_url) as reference:
        if reference is None:
            pytest.fail(
                "langgraph dev (the reference) could not be installed or started: "
                "scripts/reference-server installs it"
            )
        with graphwright_server(redis_session.url) as ours:
            yield reference, ours.url
    if os.environ.get("GW_WRITE_TABLE"):
        TABLE.write_text(table(RESULTS))


@pytest.fixture(scope="session")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def observe(name: str, url: str, kind: str, loop: asyncio.AbstractEventLoop) -> list[Observation]:
    client: Any = (
        get_sync_client(url=url, api_key=None)
        if kind == "sync"
        else Blocking(get_client(url=url, api_key=None), loop)
    )
    return run_scenario(name, client)


def open_reason(difference: str) -> str | None:
    """Why a difference is deliberate (EVERYWHERE) or still open (OPEN); None: a failure."""
    deliberate = {pattern: f"deliberate: {why}" for pattern, why in EVERYWHERE.items()}
    return next(
        (why for pattern, why in {**deliberate, **OPEN}.items() if re.search(pattern, difference)),
        None,
    )


@pytest.mark.parametrize(("scenario", "kind"), CASES, ids=[f"{k}-{n}" for n, k in CASES])
def test_graphwright_answers_like_the_reference(
    scenario: str, kind: str, servers: tuple[str, str], loop: asyncio.AbstractEventLoop
) -> None:
    reference, ours = servers
    expected = observe(scenario, reference, kind, loop)
    got = observe(scenario, ours, kind, loop)
    assert [label for label, _ in got] == [label for label, _ in expected]
    failures = {}
    for (label, want), (_, have) in zip(expected, got, strict=True):
        found = differences(want, have)
        if kind == "sync":
            RESULTS[(scenario, label, json.dumps(want)[:60])] = found
        unexplained = [d for d in found if open_reason(d) is None]
        if unexplained and (scenario, label) not in DELIBERATE:
            failures[label] = unexplained
    assert not failures, json.dumps(failures, indent=1)


def table(results: dict[tuple[str, str, str], list[str]]) -> str:
    """The comparison table: each call the same, deliberate, or open (with what is missing)."""
    rows, counts = [], {"same": 0, "deliberate": 0, "open": 0}
    for (scenario, label, want), found in results.items():
        reasons = sorted({open_reason(d) or "FAILS" for d in found})
        if (scenario, label) in DELIBERATE:
            reasons = [f"deliberate: {DELIBERATE[(scenario, label)]}"]
        verdict = "; ".join(reasons) or "same"
        kind = (
            "same"
            if not found
            else "deliberate"
            if all(r.startswith("deliberate") for r in reasons)
            else "open"
        )
        counts[kind] += 1
        shown = want.replace("|", "\\|")  # a subgraph event's name holds a pipe
        rows.append(f"| {scenario} | {label} | `{shown}` | {verdict} |")
    head = [
        "# Protocol comparison: graphwright serve against langgraph dev",
        "",
        "Written by `GW_WRITE_TABLE=1 pytest tests/differential/test_protocol_diff.py` from one",
        "run of the scenarios in `tests/support/protocol_scenarios.py` with the sync SDK client",
        "against both servers serving `tests/support/protocol_graphs.py`. Compared per call:",
        "every key of every body and stream event, recursively and both ways (a key only one side",
        "sends is a difference); ids and times masked, and the values of the build/address keys",
        "(`langgraph_api_version`, `langgraph_plan`, `langgraph_api_url`, `lc_versions`).",
        "",
        f"{counts['same']} of {len(results)} calls answer exactly like the reference; "
        f"{counts['deliberate']} differ only on purpose; {counts['open']} still differ in the "
        "paths named (open work, not deliberate).",
        "",
        "Deliberate, everywhere: `configurable.gw_fence` (and so `metadata.gw_fence`), the fencing",
        "token every checkpoint write of a run carries; and the reference's listed runs keep",
        "`configurable.__pregel_node_finished` (null), a LangGraph-internal callback its worker",
        "puts into the stored run's config while it executes: graphwright's run record keeps",
        "what the run was created with. `__request_start_time_ms__` is compared as a time.",
        "",
        "Threads, assistants, store and crons are compared the same way (whole answers, ids and",
        "times masked) by `tests/differential/test_differential_resources.py`, its table in",
        "`tests/differential/differential_resources.md`: 67 calls, each the same but for the",
        "answer paths it names (the fencing token) and two deliberate differences:",
        "`threads.search(values)` (the reference answers 500; graphwright filters) and",
        "`assistants.set_latest` (the reference restores the config but keeps the newer context;",
        "graphwright restores both). Three users under a custom `Auth`:",
        "`tests/differential/test_differential_auth.py`, its table and deliberate differences in",
        "`tests/differential/differential_auth.md`.",
        "",
        "| scenario | call | reference answer (start) | verdict |",
        "|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n" + SURFACES + PROTOCOL_NOTE


SURFACES = """
## Beyond the classic routes: where graphwright differs on purpose

Checked by the tests named; each difference with its reason.

- **`/metrics`** (`test_metrics_have_the_reference_families_and_json` here,
  `tests/server/test_metrics.py`): every family the reference shows has the same name, type and
  labels. The reference's OpenTelemetry exporter adds `project_id`, `revision_id`,
  `deployment_type` (empty outside LangSmith's hosting) and `otel_scope_*` labels to every
  family, and a `target_info` family: graphwright has no such deployment, so neither. Its
  JSON snapshot has the reference's keys plus `redis` (the pool figures the reference's
  Postgres or Redis runtimes give; its in-memory one has none). Queue figures
  (`lg_api_num_pending_runs`, waits, `n_running`) are read from Redis, so every API process
  reports the whole cluster's; `n_running` counts busy threads (one run at a time each).
  `pending_unblocked_runs_wait_time_max_secs` equals the longest wait: a run whose thread is
  busy waits on the delayed set, not on the queue. graphwright adds `graphwright_threads`
  (by status), `graphwright_queue_taken` and `graphwright_queue_delayed`. Like the
  reference's, `/metrics` needs no key (a scraper holds none) and counts no probe.
- **Private-network preflight** (`test_a_private_network_preflight_is_allowed`): both send
  `access-control-allow-private-network: true` (`langgraph dev` always; `graphwright serve`
  on a loopback address, or with `ALLOW_PRIVATE_NETWORK=true`). When the browser asks
  (`Access-Control-Request-Private-Network`), the reference answers 400 (its CORS middleware
  refuses before its private-network middleware adds the header), so Chrome refuses the page;
  graphwright answers 200 with the header, which is what the browser needs. A preflight that
  does not ask gets no such header from graphwright.
- **`user_id` in a run's configurable** (scenario "configurable metadata"): with no caller
  identity the client's own value is kept, as the reference keeps it. With an
  authenticated caller the reference still keeps the client's value; graphwright sets the
  caller's identity, so a run cannot claim another user's `user_id`.
- **`/mcp`** (`test_mcp_answers_like_the_reference`, with the official MCP SDK's client;
  `tests/server/test_mcp_endpoint.py`): the handshake, every tool (name, title, description, input
  schema, annotations), a call's result and a failing call's are the reference's.
  `serverInfo` names graphwright and its version. graphwright's built-in graphs are
  assistants too, so they are tools as well. A call's run keeps its thread (the reference's
  stateless run deletes it), so the run is listed in `threads.search`, traced, and a gate in
  it can be answered on the review page. A call that stops at a gate waits for the
  reviewer's answer (up to `GRAPHWRIGHT_MCP_REVIEW_WAIT_S`) and returns the output of the
  run it started; if none comes in time, the gated output and a second text naming the
  thread and its review page (the reference returns the gated output). A call the inner
  `/runs/wait` refuses (a bad input: 422) is an error result with the refusal's detail.
- **`/a2a/{assistant_id}`** and the agent cards (`test_a2a_answers_like_the_reference`:
  card, a message stopping at a gate as `TASK_STATE_INPUT_REQUIRED`, the answer completing
  the same task, `GetTask`, `CancelTask` of a finished task, an unknown task, key by key;
  `tests/server/test_a2a_endpoint.py` with the `a2a-sdk` client, sent and streamed). The card
  offers no history-scope extension (graphwright answers with the whole context's history,
  that extension's default) and names graphwright's version. Streamed updates after the
  first event are A2A 1.0's `artifactUpdate`/`statusUpdate`: the reference sends v0.x's flat
  `{"kind": "status-update", ...}` there, which the 1.0 `a2a-sdk` client reads as empty
  events (v0.x callers, `message/stream`, get the flat form from graphwright too). Not
  served: `ListTasks`, `GetExtendedAgentCard`, push notifications, A2UI, file parts, the
  history-length and history-scope options.
- **Cron runs** carry their creator as the caller (`langgraph_auth_user`, `_user_id`,
  `_permissions`, `user_id`), as the reference's scheduler sets it
  (`tests/server/test_authorization.py::test_a_cron_runs_as_its_creator_whatever_user_id_it_names`;
  not in the differential: the reference's crons fire at most once a minute).
"""


def metric_shapes(url: str) -> dict[str, tuple[str, frozenset[str]]]:
    """Each family of `/metrics` by name: its type and its labels but the reference's
    deployment labels (see PROTOCOL.md), read with prometheus_client's own parser."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return {
        f.name: (
            f.type,
            frozenset(
                k for s in f.samples for k in s.labels if k not in DEPLOYMENT_LABELS and k != "le"
            ),
        )
        for f in text_string_to_metric_families(text)
    }


def test_metrics_have_the_reference_families_and_json(servers: tuple[str, str]) -> None:
    reference, ours = servers
    for url in servers:  # one counted request on each, whatever ran before
        assert httpx.post(f"{url}/threads", json={}, timeout=30).status_code == 200
    want, have = metric_shapes(reference), metric_shapes(ours)
    missing = {
        name: shape
        for name, shape in want.items()
        if name not in METRICS_ONLY_REFERENCE and have.get(name) != shape
    }
    assert not missing, {name: (shape, have.get(name)) for name, shape in missing.items()}
    want_json = httpx.get(f"{reference}/metrics?format=json", timeout=30).json()
    have_json = httpx.get(f"{ours}/metrics?format=json", timeout=30).json()
    assert set(have_json) - set(want_json) == {"redis"}  # pool figures: see PROTOCOL.md
    for key in want_json:
        assert type(have_json[key]) is type(want_json[key])
        if isinstance(want_json[key], dict):
            assert set(have_json[key]) == set(want_json[key]), key
    row = next(r for r in have_json["api"]["http_requests_total"] if r["path"] == "/threads")
    assert set(row) == set(want_json["api"]["http_requests_total"][0])


def preflight(url: str, **asked: str) -> httpx.Response:
    return httpx.options(
        f"{url}/threads/search",
        timeout=30,
        headers={
            "Origin": "https://hosted.example",
            "Access-Control-Request-Method": "POST",
            **asked,
        },
    )


def test_a_private_network_preflight_is_allowed(servers: tuple[str, str]) -> None:
    """Chrome asks before a hosted page may call a server on the user's machine; both servers
    allow it, graphwright with the 200 the browser needs (see PROTOCOL.md for the reference's
    400)."""
    reference, ours = servers
    asked = {"Access-Control-Request-Private-Network": "true"}
    for url in (reference, ours):
        assert preflight(url, **asked).headers["access-control-allow-private-network"] == "true"
    assert preflight(ours, **asked).status_code == 200
    assert preflight(reference, **asked).status_code == 400  # PROTOCOL.md: deliberate
    assert preflight(ours).status_code == preflight(reference).status_code == 200


async def mcp_view(url: str) -> dict[str, Any]:
    """What the official MCP client sees of a server: handshake, tools, a call, a failure."""
    async with Client(f"{url}/mcp") as client:
        tools = (await client.list_tools()).tools
        done = await client.call_tool("subgraph", {"steps": ["x"]})
        failed = await client.call_tool("raising", {"steps": []})
        info = client.server_info
        return {
            "version": client.protocol_version,
            "server": sorted(vars(info)) if info else None,
            "capabilities": client.server_capabilities.model_dump(exclude_none=True),
            "tools": {t.name: t.model_dump(exclude_none=True) for t in tools},
            "done": done.model_dump(exclude_none=True),
            "failed": [failed.is_error, [c.type for c in failed.content]],
        }


def test_mcp_answers_like_the_reference(
    servers: tuple[str, str], loop: asyncio.AbstractEventLoop
) -> None:
    want, have = (loop.run_until_complete(mcp_view(url)) for url in servers)
    assert set(have["tools"]) - set(want["tools"]) <= BUILT_IN_GRAPHS  # PROTOCOL.md
    have["tools"] = {name: tool for name, tool in have["tools"].items() if name in want["tools"]}
    assert have == want


def a2a_view(url: str) -> dict[str, Any]:
    """An A2A conversation with the gated graph's agent, raw JSON-RPC, ids and times masked:
    its card, a message that stops at the gate, the answer, the task read back, a cancel."""
    agent = f"{url}/a2a/{uuid.uuid5(SYSTEM_NS, 'interrupting')}"
    card = httpx.get(f"{agent}/.well-known/agent-card.json", timeout=30).json()

    def rpc(method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx.post(agent, json=body, timeout=30).json()

    def text(value: str, **ids: str) -> dict[str, Any]:
        return {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": value}],
                **ids,
            }
        }

    asked = rpc("SendMessage", text("hi"))
    task = asked["result"]["task"]
    ids = {"taskId": task["id"], "contextId": task["contextId"]}
    answered = rpc("SendMessage", text("yes", **ids))
    seen = {
        "card": card,
        "asked": asked,
        "answered": answered,
        "read": rpc("GetTask", {"id": task["id"]}),
        "cancel": rpc("CancelTask", {"id": task["id"]}),
        "unknown": rpc("GetTask", {"id": "nope:nope"}),
    }
    return mask(json.loads(json.dumps(seen).replace(url, "<server>")))


def test_a2a_answers_like_the_reference(servers: tuple[str, str]) -> None:
    want, have = (a2a_view(url) for url in servers)
    found = [d for d in differences(want, have) if not re.search(A2A_DELIBERATE, d)]
    assert not found, found


def test_thread_streams_answer_like_the_reference(
    servers: tuple[str, str], loop: asyncio.AbstractEventLoop
) -> None:
    """`client.threads.stream` over SSE and the WebSocket: a run to its interrupt, the
    answer, the resumed run to its end; a run with a subgraph; malformed commands."""
    reference, ours = servers
    want = thread_stream_view(reference, loop, tries=2)
    have = thread_stream_view(ours, loop)
    found = differences(want, have)
    assert not found, found
