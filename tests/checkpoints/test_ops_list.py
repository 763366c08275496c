"""Listing without Redis (`checkpoints/ops_list.py`): the bounds of each page read, the
cursor between pages, the sweep of index entries whose thread expired, and a limit that
spans namespaces and threads."""

from __future__ import annotations

import pytest

from graphwright.checkpoints import codec, ops, ops_list
from graphwright.checkpoints.ops import SCRIPT
from tests.support.sans_io import KEYS, commands, config, ctx, member, run, run_listing


def test_a_page_reads_newest_first_below_its_cursor_and_loads_what_it_found() -> None:
    found = [member("c3", parent="c2"), member("c2", parent="c1")]
    page, (read, index) = run(
        ops_list.list_page(ctx(), "t", "", before_id="c4", size=2, only_id=None, filter=None),
        [found],
        [[], []],  # no writes indexed for either, no channels: nothing more to read
    )
    ns = codec.ns_prefix("")
    assert read.commands == [
        (
            "ZREVRANGEBYLEX",
            KEYS.checkpoints("t"),
            b"(" + codec.checkpoint_prefix("", "c4"),
            b"[" + ns,
            "LIMIT",
            0,
            2,
        )
    ]
    assert commands([index]) == ["ZRANGEBYLEX", "ZRANGEBYLEX"]
    assert [t.config["configurable"]["checkpoint_id"] for t in page.tuples] == ["c3", "c2"]
    assert (page.last_id, page.exhausted) == ("c2", False)  # a full page: there may be more


def test_a_short_page_is_the_last_and_an_empty_one_reads_nothing_more() -> None:
    page, _ = run(
        ops_list.list_page(ctx(), "t", "", before_id=None, size=5, only_id=None, filter=None),
        [[member("c1")]],
        [[]],
    )
    assert page.exhausted and page.last_id == "c1"
    empty, batches = run(
        ops_list.list_page(ctx(), "t", "sub", before_id=None, size=5, only_id=None, filter=None),
        [[]],
    )
    assert empty == ops_list.Page([], None, True) and len(batches) == 1
    assert batches[0].commands[0][2] == ops.upper(codec.ns_prefix("sub"))  # the whole namespace


def test_a_filter_is_applied_to_the_metadata_before_anything_else_is_read() -> None:
    found = [member("c2", metadata={"source": "input"}), member("c1", metadata={"source": "loop"})]
    page, (_, index) = run(
        ops_list.list_page(
            ctx(), "t", "", before_id=None, size=2, only_id=None, filter={"source": "input"}
        ),
        [found],
        [[]],
    )
    assert len(index.commands) == 1  # only c2's writes are read
    assert [t.metadata for t in page.tuples] == [{"source": "input"}]
    assert page.last_id == "c1"  # the cursor moves past what the filter dropped


def test_one_named_checkpoint_is_read_as_get_tuple_and_refused_past_the_cursor() -> None:
    nothing, batches = run(
        ops_list.list_page(ctx(), "t", "", before_id="c2", size=9, only_id="c3", filter=None)
    )
    assert nothing.tuples == [] and batches == []
    page, (read,) = run(
        ops_list.list_page(ctx(), "t", "", before_id=None, size=9, only_id="c1", filter={"a": 1}),
        [[member("c1", metadata={"a": 2}), [], []]],
    )
    assert read.commands[0][:2] == (SCRIPT, "read") and page == ops_list.Page([], None, True)


def test_namespaces_are_unescaped_and_an_empty_answer_checks_for_layout_1() -> None:
    found, (batch,) = run(ops_list.namespaces(ctx(), "t"), [[b"", b"sub%3A1"]])
    assert found == ["", "sub:1"]
    assert batch.commands == [(SCRIPT, "namespaces", 1, KEYS.checkpoints("t"))]
    assert run(ops_list.namespaces(ctx(), "t"), [[]], [0])[0] == []
    with pytest.raises(ops.LegacyThread):
        run(ops_list.namespaces(ctx(), "t"), [[]], [1])


def test_a_thread_id_page_sweeps_expired_threads_and_gives_the_next_cursor() -> None:
    (ids, cursor), (read, exists, sweep) = run(
        ops_list.thread_id_page(ctx(), "a b", 3),
        [[b"b", b"c%20d", b"e"]],
        [1, 0, 2],  # c d has neither checkpoints nor meta any more
        [1],
    )
    assert read.commands == [("ZRANGEBYLEX", KEYS.thread_ids(), "(a%20b", "+", "LIMIT", 0, 3)]
    assert exists.commands[1] == ("EXISTS", KEYS.checkpoints("c d"), KEYS.meta("c d"))
    assert sweep.commands == [("ZREM", KEYS.thread_ids(), "c%20d")]
    assert (ids, cursor) == (["b", "e"], "e")  # the cursor passes the swept one too
    (ids, cursor), batches = run(ops_list.thread_id_page(ctx(), None, 3), [[b"x"]], [1])
    assert batches[0].commands[0][2] == "-" and (ids, cursor) == (["x"], None)
    (ids, cursor), batches = run(ops_list.thread_id_page(ctx(), None, 3), [[]])
    assert (ids, cursor, len(batches)) == ([], None, 1)  # an empty index: no sweep


def test_all_threads_are_newest_first_with_their_times() -> None:
    found, (_, _, sweep) = run(
        ops_list.all_threads(ctx()),
        [[(b"new", b"20"), (b"gone", b"15"), (b"old", 10.0)]],
        [1, 0, 1],
        [1],
    )
    assert found == [("new", 20.0), ("old", 10.0)]
    assert sweep.commands == [("ZREM", KEYS.threads(), "gone")]


def test_a_limit_spans_namespaces_and_stops_reading_once_met() -> None:
    pages, batches = run_listing(
        ops_list.listing(
            ctx(), config("t", None), filter=None, before_id=None, limit=3, nss=["", "sub"]
        ),
        [[member("c2"), member("c1")]],  # "": a short page of two
        [[], []],
        [[member("s2", ns="sub")]],  # "sub": asked for the one left
        [[]],
    )
    assert [[t.config["configurable"]["checkpoint_id"] for t in p] for p in pages] == [
        ["c2", "c1"],
        ["s2"],
    ]
    assert batches[2].commands[0][-1] == 1  # the page size is what the limit leaves


def test_a_config_namespace_lists_only_that_namespace_and_all_threads_walk_the_index() -> None:
    pages, batches = run_listing(
        ops_list.listing(ctx(), config("t", "sub"), filter=None, before_id=None, limit=None), [[]]
    )
    assert pages == [] and batches[0].commands[0][3] == b"[" + codec.ns_prefix("sub")
    pages, batches = run_listing(
        ops_list.listing(ctx(), None, filter=None, before_id=None, limit=None),
        [[b"t"]],  # one thread in the index
        [1],
        [[b""]],  # its namespaces
        [[member("c1")]],
        [[]],
    )
    assert len(pages) == 1 and commands(batches)[:3] == ["ZRANGEBYLEX", "EXISTS", SCRIPT]
