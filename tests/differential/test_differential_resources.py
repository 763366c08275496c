"""Every thread, state, assistant, store and cron call of the SDK, against the reference
server and graphwright, call by call (the table: tests/differential/differential_resources.md).

Set `GW_WRITE_TABLE=1` to rewrite the table from this run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graphwright.testing.service import Service, service_for
from tests.support.differential import Step, compare, reference_server, table
from tests.support.paths import SUPPORT

# Slow: the reference Agent Server answers every resource call
pytestmark = pytest.mark.slow

TABLE = Path(__file__).with_name("differential_resources.md")
T2 = str(uuid.uuid4())  # a thread id the caller chooses (the reference wants UUIDs)
YEARLY = "0 0 1 1 *"  # crons that never fire during the test
C = Any  # the context of one server's run: each step's answer by step name


def tid(ctx: C, step: str = "threads.create") -> str:
    return str(ctx[step]["thread_id"])


def first_checkpoint(ctx: C) -> str:
    return str(ctx["threads.update_state"]["checkpoint"]["checkpoint_id"])


def aid(ctx: C) -> str:
    return str(ctx["assistants.create"]["assistant_id"])


def cron_id(ctx: C) -> str:
    return str(ctx["crons.create"]["cron_id"])


CHECKPOINT_META = ("metadata.gw_fence",)
META_NOTE = (
    "graphwright's fencing token rides in checkpoint metadata"
    " (deliberate, tests/differential/PROTOCOL.md)"
)
SYSTEM = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "counter"))

STEPS: list[Step] = [
    # --- threads -----------------------------------------------------------------
    Step(
        "threads.create", lambda c, x: c.threads.create(metadata={"user": "li"}, graph_id="counter")
    ),
    Step(
        "threads.create(thread_id)",
        lambda c, x: c.threads.create(thread_id=T2, metadata={"user": "bo"}),
    ),
    Step("threads.create(if_exists=raise)", lambda c, x: c.threads.create(thread_id=T2)),
    Step(
        "threads.create(if_exists=do_nothing)",
        lambda c, x: c.threads.create(thread_id=T2, if_exists="do_nothing"),
    ),
    Step("threads.get", lambda c, x: c.threads.get(tid(x))),
    Step("threads.update", lambda c, x: c.threads.update(tid(x), metadata={"topic": "x"})),
    Step("threads.get_state(empty)", lambda c, x: c.threads.get_state(tid(x))),
    Step(
        "threads.update_state",
        lambda c, x: c.threads.update_state(tid(x), {"items": ["a"], "count": 5}, as_node="step"),
    ),
    Step("threads.get_state", lambda c, x: c.threads.get_state(tid(x)), CHECKPOINT_META, META_NOTE),
    Step(
        "threads.update_state(again)", lambda c, x: c.threads.update_state(tid(x), {"items": ["b"]})
    ),
    Step(
        "threads.get_history",
        lambda c, x: c.threads.get_history(tid(x), limit=10),
        tuple(f"*.{p}" for p in CHECKPOINT_META),
        META_NOTE,
    ),
    Step(
        "threads.get_history(before)",
        lambda c, x: c.threads.get_history(
            tid(x), limit=5, before={"configurable": {"checkpoint_id": first_checkpoint(x)}}
        ),  # type: ignore[arg-type]  # the reference reads a config here
        tuple(f"*.{p}" for p in CHECKPOINT_META),
        META_NOTE,
    ),
    Step(
        "threads.get_history(metadata)",
        lambda c, x: c.threads.get_history(tid(x), metadata={"source": "update", "step": 1}),
        tuple(f"*.{p}" for p in CHECKPOINT_META),
        META_NOTE,
    ),
    Step(
        "threads.get_state(checkpoint_id)",
        lambda c, x: c.threads.get_state(tid(x), checkpoint_id=first_checkpoint(x)),
        (*CHECKPOINT_META, "checkpoint.checkpoint_ns"),
        "and the reference's saver echoes no namespace it was not given",
    ),
    Step(
        "threads.get_state(checkpoint)",
        lambda c, x: c.threads.get_state(
            tid(x), checkpoint={"checkpoint_id": first_checkpoint(x), "checkpoint_ns": ""}
        ),
        CHECKPOINT_META,
        META_NOTE,
    ),
    Step("threads.search(metadata)", lambda c, x: c.threads.search(metadata={"user": "li"})),
    Step(
        "threads.search(status, sort, page)",
        lambda c, x: c.threads.search(
            status="idle", limit=2, offset=1, sort_by="created_at", sort_order="asc"
        ),
    ),
    Step(
        "threads.search(ids)", lambda c, x: c.threads.search(ids=[tid(x), T2], sort_by="created_at")
    ),
    Step(
        "threads.search(select)",
        lambda c, x: c.threads.search(metadata={"user": "bo"}, select=["thread_id", "metadata"]),
    ),
    Step(
        "threads.search(values)",
        lambda c, x: c.threads.search(values={"count": 5}),
        known="the reference answers 500 to a values filter; graphwright filters",
    ),
    Step("threads.count(metadata)", lambda c, x: c.threads.count(metadata={"user": "li"})),
    Step("threads.count(status)", lambda c, x: c.threads.count(status="idle")),
    Step(
        "threads.update_state(fork)",
        lambda c, x: c.threads.update_state(
            tid(x), {"items": ["fork"]}, checkpoint_id=first_checkpoint(x)
        ),
    ),
    Step(
        "threads.get_state(after fork)",
        lambda c, x: c.threads.get_state(tid(x)),
        CHECKPOINT_META,
        META_NOTE,
    ),
    Step(
        "threads.copy",
        lambda c, x: c.threads.copy(tid(x)),
        ("values", "interrupts", "error"),
        "the reference's copy has the checkpoints but not yet the thread's cached values",
    ),
    Step(
        "threads.get_state(copy)",
        lambda c, x: c.threads.get_state(tid(x, "threads.copy")),
        CHECKPOINT_META,
        META_NOTE,
    ),
    Step(
        "threads.create(supersteps)",
        lambda c, x: c.threads.create(
            graph_id="counter",
            supersteps=[
                {"updates": [{"values": {"items": ["s1"]}, "as_node": "step"}]},
                {"updates": [{"values": {"items": ["s2"], "count": 2}, "as_node": "step"}]},
            ],
        ),
    ),
    Step(
        "threads.get_state(supersteps)",
        lambda c, x: c.threads.get_state(tid(x, "threads.create(supersteps)")),
        CHECKPOINT_META,
        META_NOTE,
    ),
    Step("threads.prune", lambda c, x: c.threads.prune([tid(x, "threads.copy")])),
    Step("threads.delete", lambda c, x: c.threads.delete(T2)),
    Step("threads.get(deleted)", lambda c, x: c.threads.get(T2)),
    Step("threads.create(for a run)", lambda c, x: c.threads.create(metadata={"user": "ru"})),
    Step(
        "runs.wait then threads.get",
        lambda c, x: (
            c.runs.wait(tid(x, "threads.create(for a run)"), "counter", input={"goal": "g"}),
            c.threads.get(tid(x, "threads.create(for a run)")),
        )[1],
        ("values", "config"),
        "values: the run's input differs (graphwright's runs take a goal); "
        "config: the reference keeps the last run's configurable on the thread",
    ),
    # --- assistants --------------------------------------------------------------
    Step("assistants.search(graph_id)", lambda c, x: c.assistants.search(graph_id="counter")),
    Step("assistants.get(system)", lambda c, x: c.assistants.get(SYSTEM)),
    Step(
        "assistants.create",
        lambda c, x: c.assistants.create(
            "counter", context={"tone": "dry"}, metadata={"team": "x"}, name="Counter two"
        ),
    ),
    Step(
        "assistants.create(if_exists=raise)",
        lambda c, x: c.assistants.create("counter", assistant_id=aid(x)),
    ),
    Step(
        "assistants.update",
        lambda c, x: c.assistants.update(
            aid(x), context={"tone": "warm"}, metadata={"owner": "li"}
        ),
    ),
    Step("assistants.get_versions", lambda c, x: c.assistants.get_versions(aid(x))),
    Step(
        "assistants.set_latest",
        lambda c, x: c.assistants.set_latest(aid(x), 1),
        known=(
            "the reference restores config but keeps the newer context; graphwright restores both"
        ),
    ),
    Step(
        "assistants.get",
        lambda c, x: c.assistants.get(aid(x)),
        ("context",),
        "context: as in set_latest",
    ),
    Step("assistants.count(graph_id)", lambda c, x: c.assistants.count(graph_id="counter")),
    Step("assistants.count(metadata)", lambda c, x: c.assistants.count(metadata={"team": "x"})),
    Step(
        "assistants.search(name, select)",
        lambda c, x: c.assistants.search(name="two", select=["assistant_id", "name", "version"]),
    ),
    Step(
        "assistants.search(metadata, sort)",
        lambda c, x: c.assistants.search(
            metadata={"owner": "li"}, sort_by="name", sort_order="asc"
        ),
    ),
    Step("assistants.get_schemas", lambda c, x: c.assistants.get_schemas(aid(x))),
    Step("assistants.get_subgraphs", lambda c, x: c.assistants.get_subgraphs(aid(x))),
    Step("assistants.delete", lambda c, x: c.assistants.delete(aid(x))),
    Step("assistants.get(deleted)", lambda c, x: c.assistants.get(aid(x))),
    # --- store -------------------------------------------------------------------
    Step(
        "store.put_item", lambda c, x: c.store.put_item(["users", "li"], "prefs", {"color": "blue"})
    ),
    Step(
        "store.put_item(other)",
        lambda c, x: c.store.put_item(["users", "bo"], "prefs", {"color": "red"}),
    ),
    Step("store.get_item", lambda c, x: c.store.get_item(["users", "li"], "prefs")),
    Step("store.get_item(missing)", lambda c, x: c.store.get_item(["users", "li"], "nope")),
    Step(
        "store.search_items(filter)",
        lambda c, x: c.store.search_items(["users"], filter={"color": "red"}),
    ),
    Step(
        "store.search_items(page)", lambda c, x: c.store.search_items(["users"], limit=1, offset=1)
    ),
    Step("store.list_namespaces", lambda c, x: c.store.list_namespaces(prefix=["users"])),
    Step("store.list_namespaces(max_depth)", lambda c, x: c.store.list_namespaces(max_depth=1)),
    Step("store.delete_item", lambda c, x: c.store.delete_item(["users", "bo"], "prefs")),
    Step("store.get_item(deleted)", lambda c, x: c.store.get_item(["users", "bo"], "prefs")),
    # LangGraph's memory-agent template's namespace, labels of odd characters, and the
    # labels LangGraph refuses (a root "langgraph", a NUL byte): the same codes.
    Step(
        "store.put_item(memories)",
        lambda c, x: c.store.put_item(["memories", "user-1"], "m1", {"content": "likes tea"}),
    ),
    Step("store.get_item(memories)", lambda c, x: c.store.get_item(["memories", "user-1"], "m1")),
    Step("store.search_items(memories)", lambda c, x: c.store.search_items(["memories"])),
    Step(
        "store.list_namespaces(memories)", lambda c, x: c.store.list_namespaces(prefix=["memories"])
    ),
    Step(
        "store.put_item(odd labels)",
        lambda c, x: c.store.put_item(["a b", "ü:{x}*|%2E"], "k", {"v": 1}),
    ),
    Step("store.get_item(odd labels)", lambda c, x: c.store.get_item(["a b", "ü:{x}*|%2E"], "k")),
    Step("store.put_item(langgraph root)", lambda c, x: c.store.put_item(["langgraph"], "k", {})),
    Step("store.put_item(NUL label)", lambda c, x: c.store.put_item(["a\x00b"], "k", {})),
    # --- crons -------------------------------------------------------------------
    Step(
        "crons.create",
        lambda c, x: c.crons.create(
            "counter", schedule=YEARLY, input={"goal": "g"}, metadata={"kind": "yearly"}
        ),
    ),
    Step(
        "crons.create_for_thread",
        lambda c, x: c.crons.create_for_thread(
            tid(x), "counter", schedule=YEARLY, input={"goal": "h"}
        ),
    ),
    Step(
        "crons.search",
        lambda c, x: c.crons.search(assistant_id=SYSTEM, sort_by="created_at", sort_order="asc"),
    ),
    Step("crons.count", lambda c, x: c.crons.count()),
    Step("crons.count(thread_id)", lambda c, x: c.crons.count(thread_id=tid(x))),
    Step(
        "crons.update", lambda c, x: c.crons.update(cron_id(x), schedule="0 0 2 1 *", enabled=False)
    ),
    Step("crons.delete", lambda c, x: c.crons.delete(cron_id(x))),
    Step("crons.count(after delete)", lambda c, x: c.crons.count()),
]


@pytest.fixture
def ours(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(redis_url, prefix, "tests.support.plain_graphs:register") as svc:
        yield svc


def test_every_resource_call_answers_like_the_reference(ours: Service, tmp_path: Path) -> None:
    with reference_server(
        {"counter": str(SUPPORT / "plain_graphs.py") + ":graph"}, tmp_path / "reference"
    ) as url:
        reference: SyncLangGraphClient = get_sync_client(url=url, api_key=None)
        outcomes = compare(STEPS, reference, get_sync_client(url=ours.url, api_key=None))
    if os.environ.get("GW_WRITE_TABLE"):
        TABLE.write_text(
            table(
                outcomes,
                "Threads, state, assistants, store and crons: graphwright vs the reference",
            )
        )
    different = [
        (o.step.name, o.reference, o.ours) for o in outcomes if not o.same and not o.step.known
    ]
    assert not different, "\n\n".join(
        f"{n}\nreference: {r}\nours:      {g}" for n, r, g in different
    )
