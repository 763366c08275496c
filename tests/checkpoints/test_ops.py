"""The saver's hot operations without Redis (`checkpoints/ops.py`): the commands each of
`put`, `put_writes` and `get_tuple` sends, round trip by round trip, and what it makes
of the replies, corrupt ones included. The savers' behaviour on a real server is
tests/checkpoints/test_saver*.py; these pin the operations one step at a time."""

from __future__ import annotations

from typing import Any, cast

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, CheckpointTuple

from graphwright.checkpoints import codec, ops
from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright.checkpoints.ops import SCRIPT, Batch
from tests.support.sans_io import (
    KEYS,
    SERDE,
    blob,
    checkpoint,
    commands,
    config,
    ctx,
    member,
    run,
    write,
)

NOW = 1_700_000_000_000


def put(
    c: ops.Ctx, cfg: RunnableConfig, metadata: dict[str, Any], **values: Any
) -> ops.Op[RunnableConfig]:
    """`ops.put` of checkpoint `c2` with `values` as new channel versions `1`."""
    cp = checkpoint("c2", dict.fromkeys(values, 1))
    cp["channel_values"] = dict(values)
    return ops.put(c, cfg, cp, cast(CheckpointMetadata, metadata), dict.fromkeys(values, 1), NOW)


def test_upper_bounds_exactly_the_members_that_start_with_a_prefix() -> None:
    prefix = codec.checkpoint_prefix("", "c1")
    bound = ops.upper(prefix)[1:]  # without the exclusive marker "("
    inside = [prefix, prefix + b"\xff\xff", member("c1")]
    outside = [codec.checkpoint_prefix("", "c10"), codec.checkpoint_prefix("", "c2")]
    assert all(m < bound for m in inside)
    assert all(m > bound or not m.startswith(prefix) for m in outside)


def test_the_first_put_of_a_thread_writes_it_then_its_index_entries() -> None:
    returned, batches = run(
        put(ctx(), config("t", "", "c1"), {"run_id": "r1"}, messages=["hi"]),
        [[None, None], 0, 1, 1, 1],  # nothing indexed yet
        [1, 1, 1, 2],
    )
    assert returned == config("t", "", "c2")
    first, second = batches
    assert commands([first]) == ["HMGET", "ZREMRANGEBYLEX", "HSET", "ZADD", "SADD"]
    assert first.commands[0] == ("HMGET", KEYS.indexed("t"), "thread", "run:r1")
    prefix = codec.checkpoint_prefix("", "c2")
    assert first.commands[1] == (
        "ZREMRANGEBYLEX",
        KEYS.checkpoints("t"),
        b"[" + prefix,
        ops.upper(prefix),
    )
    assert first.commands[2] == (
        "HSET",
        KEYS.blobs("t"),
        codec.blob_field("", "messages", 1),
        blob(["hi"]),
    )
    stored = codec.decode_doc(first.commands[3][3], key="k")
    assert (stored.checkpoint_id, stored.parent_id, stored.run_id) == ("c2", "c1", "r1")
    assert first.commands[4] == ("SADD", KEYS.run_ids("t"), "r1")
    assert second.commands == [
        ("ZADD", KEYS.threads(), "NX", NOW, "t"),
        ("ZADD", KEYS.thread_ids(), 0, "t"),
        ("SADD", KEYS.run("r1"), "t"),
        ("HSET", KEYS.indexed("t"), "thread", 1, "run:r1", 1),
    ]
    assert not first.atomic and not second.atomic


def test_a_put_into_an_indexed_thread_and_run_is_one_round_trip() -> None:
    _, batches = run(put(ctx(), config("t"), {"run_id": "r1"}, x=1), [[b"1", b"1"], 0, 1, 1, 1])
    assert len(batches) == 1


def test_a_new_run_in_an_indexed_thread_indexes_only_the_run() -> None:
    _, (_, index) = run(
        put(ctx(), config("t"), {"run_id": "r2"}, x=1), [[b"1", None], 0, 1, 1, 1], [1, 1]
    )
    assert index.commands == [
        ("SADD", KEYS.run("r2"), "t"),
        ("HSET", KEYS.indexed("t"), "run:r2", 1),
    ]


def test_a_put_without_new_values_writes_no_blobs_and_a_channel_without_value_is_empty() -> None:
    _, (batch,) = run(put(ctx(), config("t"), {}), [[b"1", None], 0, 1])
    assert commands([batch]) == ["HMGET", "ZREMRANGEBYLEX", "ZADD"]  # no run: no SADD either
    cp = checkpoint("c2", {"gone": 1})
    _, (batch,) = run(
        ops.put(ctx(), config("t"), cp, {}, {"gone": 1}, NOW), [[b"1", None], 0, 1, 1]
    )
    assert batch.commands[2] == (
        "HSET",
        KEYS.blobs("t"),
        codec.blob_field("", "gone", 1),
        b"empty\x00",
    )


def test_a_ttl_refreshes_every_key_of_the_thread_and_the_index_marker() -> None:
    _, (first, second) = run(
        put(ctx(ttl_s=60), config("t"), {}, x=1),
        [[None, None], 0, 1, 1, *[1] * len(KEYS.ttl_keys("t"))],
        [1, 1, 1, 1],
    )
    assert [c for c in first.commands if c[0] == "EXPIRE"] == [
        ("EXPIRE", key, 60) for key in KEYS.ttl_keys("t")
    ]
    assert second.commands[-1] == ("EXPIRE", KEYS.indexed("t"), 60)


def test_a_fenced_put_is_one_script_call_carrying_its_token() -> None:
    cfg = config("t", "", "c1")
    cfg["configurable"][ops.FENCE] = 7
    _, (batch,) = run(put(ctx(), cfg, {"run_id": "r1"}, x=1), [3])  # flags: the script indexed
    ((name, script, numkeys, *rest),) = batch.commands
    assert (name, script, numkeys) == (SCRIPT, "put", 8)  # 5 thread keys + 3 global ones
    keys, args = rest[:numkeys], rest[numkeys:]
    assert keys[3] == KEYS.fence("t") and keys[5:] == [
        KEYS.threads(),
        KEYS.thread_ids(),
        KEYS.run("r1"),
    ]
    assert args[2:5] == ["7", "r1", ""]  # token, run, no TTL
    assert args[-2:] == [codec.blob_field("", "x", 1), blob(1)]


def test_a_fenced_put_on_a_cluster_writes_the_global_index_in_a_second_batch() -> None:
    cfg = config("t")
    cfg["configurable"][ops.FENCE] = 7
    _, (script, index) = run(put(ctx(cluster=True), cfg, {"run_id": "r1"}, x=1), [3], [1, 1, 1, 2])
    assert script.commands[0][2] == 5  # no key of another slot in the script
    assert commands([index]) == ["ZADD", "ZADD", "SADD", "HSET"]


def test_stamp_thread_names_the_thread_and_the_checkpoint_a_fork_came_from() -> None:
    cfg = config("t", "", "c1")
    cfg["metadata"] = {"checkpoint_id": "origin"}
    _, (batch,) = run(put(ctx(stamp_thread=True), cfg, {"source": "fork"}), [[b"1", None], 0, 1])
    stored = codec.decode_doc(batch.commands[2][3], key="k")
    meta = codec.load_metadata(SERDE, stored, key="k")
    assert meta == {"thread_id": "t", "source": "fork", "checkpoint_id": "origin"}


def test_put_writes_needs_a_checkpoint_and_sends_nothing_for_no_writes() -> None:
    with pytest.raises(ValueError, match="checkpoint_id"):
        run(ops.put_writes(ctx(), config("t"), [("x", 1)], "task", ""))
    assert run(ops.put_writes(ctx(), config("t", "", "c1"), [], "task", "")) == (None, [])


def test_put_writes_keeps_the_first_write_and_replaces_special_channels() -> None:
    writes = [("x", 1), ("__error__", "boom")]
    _, (batch,) = run(ops.put_writes(ctx(), config("t", "", "c1"), writes, "task", "p"), [1, 1, 2])
    normal, error = (
        write("", "c1", "task", 0, "x", 1, "p"),
        write("", "c1", "task", -1, "__error__", "boom", "p"),
    )
    assert batch.commands == [
        ("HSETNX", KEYS.writes("t"), *normal),  # a replayed write changes nothing
        ("HSET", KEYS.writes("t"), *error),  # an error replaces the one before
        ("ZADD", KEYS.write_index("t"), 0, normal[0], 0, error[0]),
    ]


def test_fenced_writes_are_one_script_call_flagging_which_to_replace() -> None:
    cfg = config("t", "", "c1")
    cfg["configurable"][ops.FENCE] = 3
    _, (batch,) = run(ops.put_writes(ctx(ttl_s=9), cfg, [("__interrupt__", 1)], "task", ""), [1])
    ((_, name, numkeys, *rest),) = batch.commands
    field, value = write("", "c1", "task", -3, "__interrupt__", 1)
    assert (name, numkeys) == ("put_writes", 3)
    assert rest == [
        KEYS.writes("t"),
        KEYS.write_index("t"),
        KEYS.fence("t"),
        "3",
        9,
        "1",
        field,
        value,
    ]


def test_get_tuple_of_a_missing_thread_is_none_and_of_a_layout_1_thread_asks_to_migrate() -> None:
    none, (batch,) = run(ops.get_tuple(ctx(), config("t")), [[None, 0]])
    assert none is None
    assert batch.commands[0][:4] == (SCRIPT, "read", 4, KEYS.checkpoints("t"))
    assert batch.commands[0][-2:] == (codec.ns_prefix(""), "")  # the latest
    with pytest.raises(ops.LegacyThread) as legacy:
        run(ops.get_tuple(ctx(), config("t", "", "c1")), [[None, 1]])
    assert legacy.value.thread_id == "t"


def test_get_tuple_assembles_values_writes_and_parent_in_two_round_trips() -> None:
    raw = member(
        "c2", ns="sub:1", parent="c1", versions={"a": 2, "b": 1, "gone": 3}, metadata={"step": 1}
    )
    w1 = write("sub:1", "c2", "t2", 0, "a", "late", "~b")
    w2 = write("sub:1", "c2", "t1", 1, "a", "early", "~a")
    found, (read, blobs) = run(
        ops.get_tuple(ctx(), config("t", "sub:1", "c2")),
        [[raw, [w1[0], w2[0], b"indexed-only"], [w1[1], w2[1], None]]],
        [[blob("A"), None, b"empty\x00"]],  # b never stored, gone emptied
    )
    assert read.commands[0][-2:] == (codec.ns_prefix("sub:1"), "c2")
    fields = [codec.blob_field("sub:1", ch, v) for ch, v in (("a", 2), ("b", 1), ("gone", 3))]
    assert blobs.commands == [("HMGET", KEYS.blobs("t"), *fields)]
    assert isinstance(found, CheckpointTuple)
    assert found.config == config("t", "sub:1", "c2")
    assert found.parent_config == config("t", "sub:1", "c1")
    assert found.checkpoint["channel_values"] == {"a": "A"}
    assert found.metadata == {"step": 1}
    assert found.pending_writes == [("t1", "a", "early"), ("t2", "a", "late")]  # by task path


def test_a_root_checkpoint_without_channels_needs_no_blob_read() -> None:
    found, batches = run(ops.get_tuple(ctx(), config("t")), [[member("c1"), [], []]])
    assert len(batches) == 1 and found.parent_config is None and found.pending_writes == []


@pytest.mark.parametrize(
    "reply, blobs",
    [
        ([b"not a document"], []),
        ([codec.checkpoint_prefix("", "c1") + b"\x93\x01\x02\x03"], []),  # too few fields
        ([member("c1", versions={"a": 1}).replace(b"\x98\x02", b"\x98\x09", 1)], []),  # format 9
        ([member("c1", versions={"a": 1})], [[[b"no type header"]]]),
        ([member("c1", versions={"a": 1})], [[[b"json\x00{not json"]]]),
    ],
    ids=[
        "no-separators",
        "short-document",
        "unknown-format",
        "blob-without-type",
        "undecodable-blob",
    ],
)
def test_corrupt_replies_are_corrupt_checkpoint_errors_naming_the_key(
    reply: list[bytes], blobs: list[object]
) -> None:
    with pytest.raises(CorruptCheckpointError, match=r"p:\{t\}:(cp|blobs)"):
        run(ops.get_tuple(ctx(), config("t")), [[*reply, [], []]], *blobs)


def test_corrupt_pending_writes_are_a_corrupt_checkpoint_error() -> None:
    field, _ = write("", "c1", "task", 0, "x", 1)
    with pytest.raises(CorruptCheckpointError, match=r"pending writes at key 'p:\{t\}:w'"):
        run(ops.get_tuple(ctx(), config("t")), [[member("c1"), [field], [b"\xc1"]]])


def test_read_writes_reads_the_index_then_the_values_and_skips_empty_reads() -> None:
    docs = [codec.decode_doc(member(c), key="k") for c in ("c1", "c2")]
    w = write("", "c2", "task", 0, "x", 1)
    replies, batches = run(ops.read_writes(ctx(), "t", docs), [[], [w[0]]], [[w[1]]])
    assert replies == [([], []), ([w[0]], [w[1]])]
    assert commands(batches) == ["ZRANGEBYLEX", "ZRANGEBYLEX", "HMGET"]
    assert run(ops.read_writes(ctx(), "t", docs), [[], []]) == (
        [([], []), ([], [])],
        [
            Batch(
                [
                    ("ZRANGEBYLEX", KEYS.write_index("t"), b"[" + p, ops.upper(p))
                    for p in (codec.checkpoint_prefix("", "c1"), codec.checkpoint_prefix("", "c2"))
                ]
            )
        ],
    )
    assert run(ops.read_writes(ctx(), "t", [])) == ([], [])
