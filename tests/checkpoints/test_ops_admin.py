"""The saver's rare operations without Redis (`checkpoints/ops_admin.py`): delete, delete
by run, copy and prune each read the thread, then name exactly the members they remove in
one atomic batch, and keep what other checkpoints still read."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from graphwright.checkpoints import codec, ops, ops_admin
from graphwright.checkpoints.ops import SCRIPT
from tests.support.sans_io import KEYS, SERDE, blob, commands, ctx, member, run, write

NOW = 1_700_000_000_000


def thread_reply(
    *members: bytes, blobs: Sequence[str] = (), writes: Sequence[bytes] = ()
) -> list[object]:
    """What `read_thread` reads of one thread: members, blob fields, write fields."""
    return [list(members), [f.encode() for f in blobs], list(writes)]


def test_delete_thread_is_one_script_call_and_a_cluster_removes_the_index_apart() -> None:
    _, (batch,) = run(ops_admin.delete_thread(ctx(), "a b"), [1])
    own = (KEYS.registry("a b"), *KEYS.saver_keys("a b"))
    assert batch.commands == [
        (
            SCRIPT,
            "delete_thread",
            len(own) + 2,
            *own,
            KEYS.threads(),
            KEYS.thread_ids(),
            "a%20b",
            len(own),
            "1",
        )
    ]
    _, (script, index) = run(ops_admin.delete_thread(ctx(cluster=True), "t"), [1], [1, 1])
    assert script.commands[0][2] == len(own) and script.commands[0][-1] == "0"
    assert index.commands == [("ZREM", KEYS.threads(), "t"), ("ZREM", KEYS.thread_ids(), "t")]


def test_read_thread_reads_several_threads_in_one_round_trip() -> None:
    (one, two), (batch,) = run(
        ops_admin.read_thread(ctx(), ["t", "u"]),
        [*thread_reply(member("c1"), blobs=["\x00a\x001"]), *thread_reply()],
    )
    assert commands([batch]) == ["ZRANGE", "HKEYS", "ZRANGE"] * 2
    assert [d.checkpoint_id for d in one.docs] == ["c1"] and one.blob_fields == ["\x00a\x001"]
    assert one.raw == {"\x00c1": member("c1")} and two.docs == [] and two.write_fields == []


def test_deleting_a_run_removes_its_checkpoints_writes_and_only_the_blobs_it_alone_read() -> None:
    kept = member("c1", versions={"shared": 1, "old": 1}, metadata={"run_id": "r0"})
    gone = member("c2", parent="c1", versions={"shared": 1, "new": 2}, metadata={"run_id": "r1"})
    w_kept, w_gone = write("", "c1", "t", 0, "x", 1)[0], write("", "c2", "t", 0, "x", 2)[0]
    _, batches = run(
        ops_admin.delete_for_runs(ctx(), ["r1"]),
        [[b"t"]],  # the threads the run wrote in
        thread_reply(kept, gone, writes=[w_kept, w_gone]),
        [1, 1, 1, 1, 1],
        [1],
    )
    members, _, drop, forget = batches
    assert members.commands == [("SMEMBERS", KEYS.run("r1"))]
    assert drop.atomic and drop.commands == [
        ("ZREM", KEYS.checkpoints("t"), gone),
        ("HDEL", KEYS.writes("t"), w_gone),
        ("ZREM", KEYS.write_index("t"), w_gone),
        ("HDEL", KEYS.blobs("t"), codec.blob_field("", "new", 2)),  # "shared" stays
        ("SREM", KEYS.run_ids("t"), "r1"),
    ]
    assert forget.commands == [("DEL", KEYS.run("r1"))]


def test_deleting_the_only_run_of_a_thread_deletes_the_savers_keys() -> None:
    only = member("c1", metadata={"run_id": "r1"})
    _, batches = run(
        ops_admin.delete_for_runs(ctx(), ["r1"]), [[b"t"]], thread_reply(only), [1], [1], [1]
    )
    assert batches[2].commands == [("DEL", *KEYS.saver_keys("t"))]
    assert batches[3].commands == [("ZREM", KEYS.thread_ids(), "t")]
    assert run(ops_admin.delete_for_runs(ctx(), ["r9"]), [[]], [0])[1][1].commands == [
        ("DEL", KEYS.run("r9"))
    ]


def test_a_copy_retargets_the_thread_named_in_metadata_and_copies_the_rest_byte_for_byte() -> None:
    named = member("c1", metadata={"thread_id": "src", "step": 1})
    other = member("c2", parent="c1", metadata={"thread_id": "elsewhere"})
    field = write("", "c1", "task", 0, "x", 1)
    _, (read, copy) = run(
        ops_admin.copy_thread(ctx(ttl_s=5), "src", "dst", NOW),
        [[named, other], {b"\x00a\x001": blob(1)}, dict([field]), [field[0]], [b"r1"]],
        [1] * 99,
    )
    assert commands([read]) == ["ZRANGE", "HGETALL", "HGETALL", "ZRANGE", "SMEMBERS"]
    assert copy.atomic
    zadd = copy.commands[0]
    assert zadd[:2] == ("ZADD", KEYS.checkpoints("dst")) and zadd[5] == other
    retargeted = codec.decode_doc(zadd[3], key="k")
    assert codec.load_metadata(SERDE, retargeted, key="k") == {"thread_id": "dst", "step": 1}
    assert ("HSET", KEYS.blobs("dst"), b"\x00a\x001", blob(1)) in copy.commands
    assert ("HSET", KEYS.writes("dst"), *field) in copy.commands
    assert ("SADD", KEYS.run_ids("dst"), b"r1") in copy.commands
    assert [c for c in copy.commands if c[0] == "EXPIRE"] == [
        ("EXPIRE", k, 5) for k in KEYS.ttl_keys("dst")
    ]
    assert copy.commands[-3:] == [
        ("ZADD", KEYS.threads(), "NX", NOW, "dst"),
        ("ZADD", KEYS.thread_ids(), 0, "dst"),
        ("SADD", KEYS.run("r1"), "dst"),
    ]


def test_copying_an_empty_thread_writes_nothing_and_a_cluster_indexes_apart() -> None:
    assert len(run(ops_admin.copy_thread(ctx(), "s", "d", NOW), [[], {}, {}, [], []])[1]) == 1
    _, (_, copy, index) = run(
        ops_admin.copy_thread(ctx(cluster=True), "s", "d", NOW),
        [[member("c1")], {}, {}, [], []],
        [1],
        [1, 1],
    )
    assert commands([copy]) == ["ZADD"] and commands([index]) == ["ZADD", "ZADD"]


def test_prune_by_delete_deletes_each_thread() -> None:
    _, batches = run(ops_admin.prune(ctx(), ["t", "u"], "delete"), [1], [1])
    assert [b.commands[0][3] for b in batches] == [KEYS.registry("t"), KEYS.registry("u")]


def test_keep_latest_keeps_each_namespaces_head_and_orphans_it() -> None:
    c1 = member("c1", versions={"a": 1, "b": 1})
    c2 = member("c2", parent="c1", versions={"a": 2, "b": 1})
    w1 = write("", "c1", "task", 0, "a", 2)[0]
    s1 = member("s1", ns="sub", versions={"a": 1})  # a checkpointer=True subgraph: stays
    _, (_, prune) = run(
        ops_admin.prune(ctx(), ["t"], "keep_latest"),
        thread_reply(c1, c2, s1, writes=[w1]),
        [1] * 6,
    )
    orphan = codec.encode_doc(codec.decode_doc(member("c2", versions={"a": 2, "b": 1}), key="k"))
    assert prune.atomic and prune.commands == [
        ("ZREM", KEYS.checkpoints("t"), c1),
        ("HDEL", KEYS.writes("t"), w1),
        ("ZREM", KEYS.write_index("t"), w1),
        ("HDEL", KEYS.blobs("t"), codec.blob_field("", "a", 1)),  # b@1 is still read by c2
        ("ZREM", KEYS.checkpoints("t"), c2),
        ("ZADD", KEYS.checkpoints("t"), 0, orphan),
    ]


def test_keep_latest_drops_a_subgraph_call_started_from_a_pruned_root() -> None:
    c1, c2 = member("c1"), member("c2", parent="c1")
    call = member("s1", ns="tool:abc", metadata={"parents": {"": "c1"}})
    _, (_, prune) = run(
        ops_admin.prune(ctx(), ["t"], "keep_latest"),
        thread_reply(c1, c2, call, blobs=["tool%3Aabc\x00a\x001"]),
        [1] * 5,
    )
    pfx = codec.ns_prefix("tool:abc")
    orphan = codec.encode_doc(codec.decode_doc(member("c2"), key="k"))
    assert prune.commands == [
        ("ZREM", KEYS.checkpoints("t"), c1),
        ("ZREM", KEYS.checkpoints("t"), c2),
        ("ZADD", KEYS.checkpoints("t"), 0, orphan),
        ("ZREMRANGEBYLEX", KEYS.checkpoints("t"), b"[" + pfx, ops.upper(pfx)),  # all of it
        ("HDEL", KEYS.blobs("t"), "tool%3Aabc\x00a\x001"),
    ]


def test_keep_latest_keeps_the_parent_an_old_format_head_reads_its_sends_from() -> None:
    c1 = member("c1")
    c2 = member("c2", parent="c1", v=3)  # format 3: pending sends live in the parent's writes
    sends = write("", "c1", "task", 0, "__pregel_tasks", "send")
    _, (_, index, values) = run(
        ops_admin.prune(ctx(), ["t"], "keep_latest"),
        thread_reply(c1, c2),
        [[sends[0]]],
        [[sends[1]]],
    )
    assert commands([index, values]) == ["ZRANGEBYLEX", "HMGET"]  # no prune batch: both kept


def test_keep_latest_refuses_threads_with_a_delta_channel() -> None:
    delta = member("c1", metadata={"counters_since_delta_snapshot": {}})
    with pytest.raises(NotImplementedError, match="DeltaChannel: t"):
        run(ops_admin.prune(ctx(), ["t"], "keep_latest"), thread_reply(delta))
