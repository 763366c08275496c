"""Behaviour of the Redis savers beyond the conformance suite: keys, round trips,
odd ids, TTL, encryption, errors, delta channels, and a real graph on it."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata
from langgraph.graph import END, START, StateGraph

from graphwright.checkpoints.errors import CorruptCheckpointError, RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.redis import RedisSaver, redact_url
from graphwright.testing.redis_servers import Server, free_port
from graphwright_errors import ConfigurationError


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> RedisSaver:
    return RedisSaver(client, prefix=prefix)


def _cfg(thread: str, ns: str = "", cid: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _cp(**values: Any) -> Any:
    cp = generate_checkpoint(channel_values=values)
    cp["channel_versions"] = dict.fromkeys(values, 1)
    return cp


def test_key_templates_are_pinned() -> None:
    k = Keys(prefix="gw")
    assert k.registry("t1") == "gw:{t1}:keys"
    assert k.checkpoints("t1") == "gw:{t1}:cp"
    assert k.blobs("t1") == "gw:{t1}:blobs"
    assert k.writes("t1") == "gw:{t1}:w"
    assert k.run_ids("t1") == "gw:{t1}:rids"
    assert k.fence("t1") == "gw:{t1}:fence"
    assert k.thread_ids() == "gw:thread_ids"
    assert k.legacy_namespaces("t1") == "gw:{t1}:ns"
    assert k.legacy_checkpoints("t1", "sub:1") == "gw:{t1}:sub%3A1:cps"
    assert k.legacy_writes("t1", "", "c1") == "gw:{t1}::w:c1"
    assert k.events("t1") == "gw:{t1}:events"
    assert k.lock("t1") == "gw:{t1}:lock"
    assert k.meta("t1") == "gw:{t1}:meta"
    assert k.run_record("t1", "r1") == "gw:{t1}:runrec:r1"
    assert k.run_end("t1", "r1") == "gw:{t1}:runend:r1"
    assert k.thread_runs("t1") == "gw:{t1}:runs"
    assert k.queue() == "gw:queue"
    assert k.workers() == "gw:workers"
    assert k.idempotency("t1", "call_1") == "gw:{t1}:idem:call_1"
    assert k.gate_decisions("t1") == "gw:{t1}:gate"
    assert k.taint("t1") == "gw:{t1}:taint"
    assert k.indexed("t1") == "gw:{t1}:indexed"
    assert k.event_ids("t1") == ("gw:{t1}:events:ids", "gw:{t1}:events:ids:old")
    assert k.threads() == "gw:threads"
    assert k.run("r1") == "gw:run:r1"
    assert k.outbox() == "gw:outbox"
    assert k.calendar() == "gw:calendar"
    assert k.effects() == "gw:effects"


def test_thread_ids_cannot_break_the_hash_tag() -> None:
    key = Keys(prefix="gw").checkpoints("a}b{c: d|é")
    tag = key[key.index("{") + 1 : key.index("}")]
    assert tag == "a%7Db%7Bc%3A%20d%7C%C3%A9"


@pytest.mark.parametrize(
    "thread", ["plain", "a:b", "{x}", "x}{y", "pipe|d", "with space", "中文线程", "é:{|} 混"]
)
def test_odd_thread_ids_and_namespaces_round_trip(saver: RedisSaver, thread: str) -> None:
    ns = "child:{1}| 子"
    cp = generate_checkpoint(channel_values={"v": thread})
    cp["channel_versions"] = {"v": 1}
    stored = saver.put(_cfg(thread, ns), cp, generate_metadata(step=1), {"v": 1})
    saver.put_writes(stored, [("v", "w")], "task-1")
    got = saver.get_tuple(_cfg(thread, ns))
    assert got is not None
    assert got.checkpoint["channel_values"] == {"v": thread}
    assert got.pending_writes == [("task-1", "v", "w")]
    assert [t for t, _ in saver.threads()] == [thread]
    assert [
        t.config["configurable"]["checkpoint_ns"]
        for t in saver.list(_cfg(thread) | {"configurable": {"thread_id": thread}})
    ] == [ns]
    saver.delete_thread(thread)
    assert saver.get_tuple(_cfg(thread, ns)) is None


def test_unchanged_channel_is_stored_once(saver: RedisSaver, client: redis.Redis) -> None:
    parent = None
    for step in range(5):
        cp = generate_checkpoint(channel_values={"big": "x" * 1000, "n": step})
        cp["channel_versions"] = {"big": 1, "n": step + 1}
        new = {"big": 1, "n": 1} if step == 0 else {"n": step + 1}
        parent = saver.put(
            _cfg("once", cid=parent["configurable"]["checkpoint_id"] if parent else None),
            cp,
            generate_metadata(step=step),
            new,
        )
    fields = client.hkeys(saver.keys.blobs("once"))
    assert sorted(f.split(b"\x00")[1] for f in fields) == [b"big"] + [b"n"] * 5


def test_write_is_idempotent_per_task_and_index(saver: RedisSaver) -> None:
    stored = saver.put(_cfg("idem"), empty_checkpoint(), generate_metadata(), {})
    saver.put_writes(stored, [("a", 1), ("b", 2)], "t")
    saver.put_writes(stored, [("a", 99), ("b", 98)], "t")
    saver.put_writes(stored, [("__error__", "first")], "t")
    saver.put_writes(stored, [("__error__", "second")], "t")
    got = saver.get_tuple(stored)
    assert got is not None
    assert sorted(got.pending_writes or []) == [
        ("t", "__error__", "second"),
        ("t", "a", 1),
        ("t", "b", 2),
    ]


def test_ttl_covers_every_key_of_the_thread_and_is_refreshed(
    client: redis.Redis, prefix: str
) -> None:
    saver = RedisSaver(client, prefix=prefix, ttl_s=100)
    stored = saver.put(_cfg("ttl"), _cp(a=1), generate_metadata(run_id="r1"), {"a": 1})
    saver.put_writes(stored, [("a", 2)], "t")
    own = [k for k in saver.keys.saver_keys("ttl") if client.exists(k)]
    assert len(own) == 6  # with the marker of its written index entries
    assert sorted(k.decode() for k in client.keys(f"{prefix}:{{ttl}}:*")) == sorted(own)
    for key in own:
        assert 0 < client.ttl(key) <= 100, key
        client.expire(key, 5)
    saver.put(stored, _cp(a=3), generate_metadata(run_id="r1"), {"a": 2})
    assert all(client.ttl(k) > 50 for k in own)


def test_encryption_at_rest_hides_values(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_AES_KEY", "0123456789abcdef")
    saver = RedisSaver(client, prefix=prefix, encrypt=True)
    cp = generate_checkpoint(channel_values={"secret": "launch code 4242"})
    cp["channel_versions"] = {"secret": 1}
    saver.put(_cfg("enc"), cp, generate_metadata(), {"secret": 1})
    raw = b"".join(client.hvals(saver.keys.blobs("enc")))
    assert b"launch code" not in raw
    got = saver.get_tuple(_cfg("enc"))
    assert got is not None and got.checkpoint["channel_values"] == {"secret": "launch code 4242"}


def test_encryption_without_a_key_is_a_clear_configuration_error(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="LANGGRAPH_AES_KEY"):
        RedisSaver(client, encrypt=True)


def test_unreachable_redis_names_the_url_without_password() -> None:
    url = f"redis://user:hunter2@127.0.0.1:{free_port()}/0"
    saver = RedisSaver.from_url(url)
    with pytest.raises(RedisUnavailableError) as err:
        saver.get_tuple(_cfg("x"))
    message = str(err.value)
    assert "hunter2" not in message
    assert "redis://user:***@127.0.0.1" in message
    assert "REDIS_URL" not in message  # storage speaks of storage; the CLI adds the advice
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_redis_going_away_mid_run_raises_and_keeps_what_was_stored(
    tmp_path: Any,
) -> None:
    from graphwright.testing.redis_servers import start_server

    server = start_server(tmp_path / "gone", "--appendonly", "yes")
    saver = RedisSaver.from_url(server.url)
    stored = saver.put(_cfg("gone"), _cp(a=1), generate_metadata(), {"a": 1})
    server.stop()
    with pytest.raises(RedisUnavailableError):
        saver.put_writes(stored, [("a", 2)], "t")
    with pytest.raises(RedisUnavailableError):
        list(saver.list(_cfg("gone")))
    restarted = start_server(tmp_path / "gone", "--appendonly", "yes", port=server.port)
    try:
        again = RedisSaver.from_url(restarted.url).get_tuple(_cfg("gone"))
        assert again is not None and again.checkpoint["channel_values"] == {"a": 1}
    finally:
        restarted.stop()


def test_corrupt_payload_names_the_key(saver: RedisSaver, client: redis.Redis) -> None:
    stored = saver.put(_cfg("bad"), _cp(a=1), generate_metadata(), {"a": 1})
    cid = stored["configurable"]["checkpoint_id"]
    key = saver.keys.checkpoints("bad")
    client.delete(key)
    client.zadd(key, {b"\x00" + cid.encode() + b"\x00\xc1garbage": 0})
    with pytest.raises(CorruptCheckpointError) as err:
        saver.get_tuple(_cfg("bad"))
    assert key in str(err.value)
    client.delete(key)
    saver.put(_cfg("bad"), _cp(a=1), generate_metadata(), {"a": 1})
    client.hset(saver.keys.blobs("bad"), "\x00a\x001", b"msgpack\x00\xc1\xc1")
    with pytest.raises(CorruptCheckpointError):
        list(saver.list(_cfg("bad")))


def test_decode_responses_client_is_refused(redis_server: Server) -> None:
    with pytest.raises(ConfigurationError, match="decode_responses"):
        RedisSaver(redis.Redis(port=redis_server.port, decode_responses=True))


class Counter(TypedDict):
    items: Annotated[list[str], operator.add]
    n: int


def _graph(saver: RedisSaver) -> Any:
    def one(state: Counter) -> dict[str, Any]:
        return {"items": ["one"], "n": state["n"] + 1}

    def two(state: Counter) -> dict[str, Any]:
        return {"items": ["two"], "n": state["n"] + 1}

    builder = StateGraph(Counter)
    builder.add_node("one", one)
    builder.add_node("two", two)
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", END)
    return builder.compile(checkpointer=saver, interrupt_before=["two"])


def test_a_graph_stops_and_resumes_from_redis_in_a_new_saver(
    client: redis.Redis, prefix: str
) -> None:
    config = {"configurable": {"thread_id": f"g-{uuid.uuid4()}"}}
    first = _graph(RedisSaver(client, prefix=prefix))
    assert first.invoke({"items": [], "n": 0}, config) == {"items": ["one"], "n": 1}
    second = _graph(RedisSaver(client, prefix=prefix))
    assert second.get_state(config).next == ("two",)
    assert second.invoke(None, config) == {"items": ["one", "two"], "n": 2}
    history = list(second.get_state_history(config))
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]


def test_unknown_prune_strategy_is_refused_before_any_write(saver: RedisSaver) -> None:
    stored = saver.put(_cfg("prune"), _cp(a=1), generate_metadata(), {"a": 1})
    with pytest.raises(ConfigurationError, match="keep_latest"):
        saver.prune(["prune"], strategy="everything")
    assert saver.get_tuple(stored) is not None


def test_a_copy_renames_only_the_metadata_that_names_the_source(
    saver: RedisSaver, client: redis.Redis
) -> None:
    saver.put(_cfg("src"), _cp(a=1), generate_metadata(thread_id="src"), {"a": 1})
    saver.put(_cfg("src", "sub:1"), _cp(a=2), generate_metadata(thread_id="other"), {"a": 1})
    saver.put(_cfg("src", "sub:2"), _cp(a=3), generate_metadata(), {"a": 1})
    saver.copy_thread("src", "dst")
    named = {
        t.config["configurable"]["checkpoint_ns"]: t.metadata.get("thread_id")
        for t in saver.list({"configurable": {"thread_id": "dst"}})
    }
    assert named == {"": "dst", "sub:1": "other", "sub:2": None}
    src, dst = (set(client.zrange(saver.keys.checkpoints(t), 0, -1)) for t in ("src", "dst"))
    assert len(src - dst) == len(dst - src) == 1  # the others are byte copies
    assert {
        t.metadata.get("thread_id") for t in saver.list({"configurable": {"thread_id": "src"}})
    } == {"src", "other", None}
