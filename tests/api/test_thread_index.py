"""The thread search index: statuses and metadata answered from Redis sets, kept current."""

from __future__ import annotations

import redis
from redis.cluster import RedisCluster

from graphwright import Orchestrator
from graphwright.checkpoints.keys import Keys
from graphwright.nodes.gate_models import Approve
from graphwright.thread_index import STATUSES, Query, ThreadIndex, contains, scalar_pairs


def test_index_key_templates_are_pinned() -> None:
    k = Keys(prefix="gw")
    assert k.threads_by("updated") == "gw:{threads-index}:by:updated"
    assert k.threads_with_status("busy") == "gw:{threads-index}:status:busy"
    assert k.threads_with_meta("a b", '"x"') == "gw:{threads-index}:meta:a%20b=%22x%22"
    assert k.thread_memberships("t:1") == "gw:{threads-index}:of:t%3A1"
    assert k.assistants() == "gw:{assistants}:latest"
    assert k.assistant_versions("a") == "gw:{assistants}:versions:a"
    assert k.crons() == "gw:{crons}:all" and k.cron_due() == "gw:{crons}:due"
    assert k.cron_firing() == "gw:{crons}:firing" and k.cron_errors() == "gw:{crons}:errors"


def test_only_scalar_pairs_are_indexed_and_containment_is_recursive() -> None:
    assert scalar_pairs({"a": 1, "b": "x", "c": None, "d": {"e": 1}, "f": [1]}) == {
        "a": "1",
        "b": '"x"',
        "c": "null",
    }
    assert contains({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 1}})
    assert not contains({"a": {"b": 1}}, {"a": {"b": 2}})
    assert not contains({"a": 1}, {"z": None})


def _write(
    index: ThreadIndex, client: redis.Redis, thread_id: str, now: float, **fields: str
) -> None:
    if isinstance(client, RedisCluster):  # as ThreadMeta.write: a cluster pipeline runs no scripts
        index.on_write(client, thread_id, fields, now)  # type: ignore[arg-type]  # same command API
        return
    with client.pipeline(transaction=True) as pipe:
        index.on_write(pipe, thread_id, fields, now)
        pipe.execute()


def test_search_by_status_and_metadata_follows_changes(client: redis.Redis, prefix: str) -> None:
    index = ThreadIndex(client, Keys(prefix=prefix))
    _write(index, client, "a", 1, created_at="1", metadata='{"user": "li", "n": 1}')
    _write(index, client, "b", 2, created_at="2", metadata='{"user": "li", "n": 2}')
    _write(index, client, "c", 3, created_at="3", metadata='{"user": "bo"}')
    _write(index, client, "b", 4, status="running")
    assert index.page(Query(), 0, 10) == ["b", "c", "a"]  # newest update first
    assert index.page(Query(order="created", descending=False), 0, 10) == ["a", "b", "c"]
    assert index.page(Query(status="idle"), 0, 10) == ["c", "a"]
    assert index.page(Query(status="busy", metadata={"user": "li"}), 0, 10) == ["b"]
    assert index.page(Query(metadata={"user": "li"}), 1, 1) == ["a"]
    assert index.count(Query(metadata={"user": "li"})) == 2
    _write(index, client, "a", 5, metadata='{"user": "bo"}')  # the old pairs are left
    assert index.page(Query(metadata={"user": "li"}), 0, 10) == ["b"]
    assert index.count(Query(metadata={"user": "bo"})) == 2
    _write(index, client, "b", 6, status="interrupted")
    assert index.status_of("b") == "interrupted" and index.count(Query(status="busy")) == 0
    index.forget(["b"])
    assert index.page(Query(), 0, 10) == ["a", "c"] and index.status_of("b") is None
    assert not client.keys(f"{prefix}:{{threads-index}}:tmp:*")  # scratch sets are removed


def test_orchestrator_runs_and_deletes_keep_the_index(orch: Orchestrator) -> None:
    orch.create_thread("t-1", {"graph_id": "agent"})
    orch.invoke("agent", "订单 A1001 到哪了？", thread_id="t-1")
    orch.invoke(
        "agent", 'Email li@example.com with the subject "Hi" saying hello.', thread_id="t-2"
    )
    assert orch.index.page(Query(status="idle", metadata={"graph_id": "agent"}), 0, 10) == ["t-1"]
    assert orch.index.page(Query(status="interrupted"), 0, 10) == ["t-2"]
    orch.delete("t-1")
    assert orch.index.page(Query(), 0, 10) == ["t-2"]


def test_a_thread_is_in_one_status_set_through_its_runs(orch: Orchestrator) -> None:
    k = orch.keys

    def sets() -> list[str]:
        return [s for s in STATUSES if orch.client.sismember(k.threads_with_status(s), "t")]

    orch.invoke("agent", "订单 A1001 到哪了？", thread_id="t")
    assert sets() == ["idle"]
    asked = orch.invoke(
        "agent", 'Email li@example.com with the subject "Hi" saying hello.', thread_id="t"
    )
    assert sets() == ["interrupted"] and asked.pending is not None
    call = asked.pending.calls[0]
    assert orch.resume("t", {call.id: Approve(digest=call.digest)}).status == "completed"
    assert sets() == ["idle"]
    assert not orch.client.exists(k.lock("t"))  # the end write gave the lock back
    assert orch.client.sismember(k.registry("t"), k.meta("t"))
