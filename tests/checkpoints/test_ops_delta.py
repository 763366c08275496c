"""DeltaChannel history without Redis (`checkpoints/ops_delta.py`): the walk follows
parent ids (not neighbours), stops at the page where every channel found its seed, and
gathers the writes down to the deepest seed, oldest first."""

from __future__ import annotations

import pytest

from graphwright.checkpoints import codec, ops, ops_delta
from tests.support.sans_io import KEYS, blob, commands, config, ctx, member, run, write


def test_no_channels_read_nothing() -> None:
    assert run(ops_delta.delta_channel_history(ctx(), config("t", "", "c3"), [])) == ({}, [])


def test_the_chain_follows_parents_past_a_fork_and_stops_at_the_seed() -> None:
    c4 = member("c4", parent="c2", versions={"m": 3})  # the target: its ancestors are read
    fork = member("c3", parent="c2", versions={"m": 3})  # a sibling: not in c4's history
    c2 = member("c2", parent="c1", versions={"m": 2})
    c1 = member("c1", versions={"m": 1})
    w1 = write("", "c1", "t1", 0, "m", "b")
    w2 = write("", "c2", "t2", 0, "m", "c")
    other = write("", "c2", "t2", 1, "x", "not asked for")
    history, batches = run(
        ops_delta.delta_channel_history(ctx(), config("t", "", "c4"), ["m"]),
        [[c4, fork, c2, c1]],
        [[None, blob(["a"])]],  # m@2 is a delta, m@1 the seed
        [[w2[0], other[0]], [w1[0]]],
        [[w2[1], other[1], w1[1]]],
    )
    read, seeds, index, values = batches
    bound = ops.upper(codec.checkpoint_prefix("", "c4"))
    assert read.commands == [
        ("ZREVRANGEBYLEX", KEYS.checkpoints("t"), bound, b"[" + codec.ns_prefix(""), "LIMIT", 0, 64)
    ]
    assert seeds.commands == [
        ("HMGET", KEYS.blobs("t"), codec.blob_field("", "m", 2), codec.blob_field("", "m", 1))
    ]
    assert commands([index, values]) == ["ZRANGEBYLEX", "ZRANGEBYLEX", "HMGET"]
    assert history == {"m": {"seed": ["a"], "writes": [("t1", "m", "b"), ("t2", "m", "c")]}}


def test_a_channel_without_a_seed_walks_to_the_root_across_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ops_delta, "PAGE", 2)
    c3, c2, c1 = (
        member("c3", parent="c2", versions={"m": 3}),
        member("c2", parent="c1", versions={"m": 2}),
        member("c1"),
    )
    w2 = write("", "c2", "t", 0, "m", "second")
    history, batches = run(
        ops_delta.delta_channel_history(ctx(), config("t"), ["m"]),  # the latest checkpoint
        [[c3, c2]],
        [[None]],  # m@2: no value stored
        [[c1]],  # the next page starts below the last member read
        [[w2[0]], []],
        [[w2[1]]],
    )
    assert batches[0].commands[0][2] == ops.upper(codec.ns_prefix(""))
    assert batches[2].commands[0][2] == b"(" + c2
    assert len(batches) == 5  # c1 has no channel: no blob to read
    assert history == {"m": {"writes": [("t", "m", "second")]}}


def test_a_missing_target_has_an_empty_history() -> None:
    history, batches = run(
        ops_delta.delta_channel_history(ctx(), config("t", "", "c9"), ["m", "n"]),
        [[member("c8")]],  # the newest below c9 is another checkpoint
    )
    assert history == {"m": {"writes": []}, "n": {"writes": []}} and len(batches) == 1
    assert run(ops_delta.delta_channel_history(ctx(), config("t"), ["m"]), [[]])[0] == {
        "m": {"writes": []}
    }
