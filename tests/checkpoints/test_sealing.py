"""Sealing at rest binds each value to its place and refuses plain ones: a sealed value
copied to another key or field does not open (and the original still does); with
encryption on, a value written in the clear is refused until `graphwright seal` seals
it; values of the old format (`GWS1`) still open and `rekey` re-seals them; keys are
derived with HKDF-SHA256."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx
import pytest
import redis
from Crypto.Cipher import AES
from Crypto.Hash import SHA256
from Crypto.Protocol.KDF import HKDF
from langgraph_sdk import get_sync_client
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.sealed import KEYS_ENV, Sealer
from graphwright.cli import app
from graphwright.offline import OfflineChatModel
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.records.cron_store import CronStore
from graphwright.server.records.run_store import RunStore
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.settings import Settings
from graphwright.testing.service import running
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import ToolCall, ToolExecutor
from graphwright.tools.records import Records

KEY = b"k" * 32
GOAL = 'Email li@example.com with the subject "Plain Pangolin" saying hello.'
LATER = 'Email li@example.com with the subject "Sealed Sloth" saying goodbye.'
PLAIN = [
    b"Plain Pangolin",
    b"li@example.com",
    b"Cron Quokka",
    b"Assistant Axolotl",
    b"Okapi",
    b"Diary Dugong",
]


def approve(gated: Any) -> dict[str, Any]:
    call = gated["__interrupt__"][0]["value"]["calls"][0]
    return {"resume": {call["id"]: {"action": "approve", "digest": call["digest"]}}}


def encrypted(settings: Settings) -> Settings:
    return Settings(
        _env_file=None,
        REDIS_URL=settings.redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=settings.key_prefix,
        GRAPHWRIGHT_ENCRYPT=True,
    )


def cli(monkeypatch: pytest.MonkeyPatch, settings: Settings, *args: str) -> str:
    monkeypatch.setenv("REDIS_URL", settings.redis_url or "")
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", settings.key_prefix)
    monkeypatch.setenv("GRAPHWRIGHT_ENCRYPT", "1")
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return result.output


def crons_of(orch: Orchestrator) -> CronStore:
    return CronStore(orch.client, orch.keys)


def test_a_value_sealed_for_one_key_and_field_opens_there_only() -> None:
    sealer = Sealer((KEY,))
    sealed = sealer.seal(b"secret", "gw:a", "f")
    assert sealer.open(sealed, "gw:a", "f") == b"secret"
    for key, field in (("gw:b", "f"), ("gw:a", "g"), ("gw:a", "")):
        with pytest.raises(CorruptCheckpointError, match="integrity check") as caught:
            sealer.open(sealed, key, field)
        assert repr(key) in str(caught.value)


def test_a_sealed_cron_copied_to_another_cron_or_key_fails_to_open_and_loses_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, client: redis.Redis
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY.decode())
    orch = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    crons = crons_of(orch)
    alpha, beta = (
        crons.create(payload={"input": {"goal": g}}, schedule="0 0 1 1 *", assistant_id="agent")[
            "cron_id"
        ]
        for g in ("alpha", "beta")
    )
    stolen = client.hget(orch.keys.crons(), alpha)
    assert stolen is not None and b"alpha" not in stolen
    client.hset(orch.keys.crons(), beta, stolen)  # alpha's document planted as beta's
    with pytest.raises(CorruptCheckpointError, match="integrity check") as caught:
        crons.get(beta)
    assert beta in str(caught.value)
    with running(orch, worker=False) as svc:  # over HTTP: the store's fault, said plainly
        answer = httpx.post(f"{svc.url}/runs/crons/search", json={})
    assert answer.status_code == 503 and "integrity check" in answer.text, answer.text
    client.hset(orch.keys.assistants(), alpha, stolen)  # and under another key
    with pytest.raises(CorruptCheckpointError, match="integrity check"):
        AssistantStore.of(orch).get(alpha)
    assert crons.get(alpha)["payload"]["input"] == {"goal": "alpha"}  # the original still opens


def test_a_thread_field_moved_to_another_field_fails_to_open(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, client: redis.Redis
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY.decode())
    orch = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    orch.update_meta("t1", metadata='{"a": 1}', remember="[]")
    key = orch.keys.meta("t1")
    client.hset(key, "remember", client.hget(key, "metadata"))  # type: ignore[arg-type]
    with pytest.raises(CorruptCheckpointError, match="'remember'"):
        orch.meta("t1")


def everything(client: redis.Redis, prefix: str) -> bytes:
    """Every key under the prefix (or opening with its hash tag) and all it holds."""
    out = b""
    for key in [*client.scan_iter(match=f"{prefix}:*"), *client.scan_iter(match=f"{{{prefix}:*")]:
        kind = client.type(key).decode()  # type: ignore[union-attr]  # bytes client
        parts: Any
        if kind == "string":
            parts = [client.get(key)]
        elif kind == "hash":
            parts = [b for kv in client.hgetall(key).items() for b in kv]  # type: ignore[union-attr]
        elif kind in ("list", "zset"):
            parts = client.lrange(key, 0, -1) if kind == "list" else client.zrange(key, 0, -1)
        elif kind == "set":
            parts = list(client.smembers(key))  # type: ignore[arg-type]
        else:
            parts = [b for _, f in client.xrange(key) for kv in f.items() for b in kv]  # type: ignore[union-attr]
        out += key + b"".join(p for p in parts if isinstance(p, bytes))
    return out


def reads(orch: Orchestrator, tid: str) -> dict[str, Any]:
    return {
        "meta": orch.meta(tid)["metadata"],
        "values": orch.state(tid).values,
        "trace": [e["kind"] for e in orch.trace(tid)],
        "crons": [c["payload"]["input"] for c in crons_of(orch).search()],
        "assistants": sorted(a["name"] for a in AssistantStore.of(orch).all()),
        "note": orch.store.get(("notes", "alice"), "n1").value,  # type: ignore[union-attr]
        "records": [
            Records(orch.client, orch.keys, ttl_s=60).get(tid, c)["result"]
            for c in calls_of(orch, tid)
        ],
    }


def outbox(orch: Orchestrator) -> list[str]:
    sent = orch.client.lrange(orch.keys.outbox(), 0, -1)
    if not orch.sealer.on:
        return [json.loads(m)["subject"] for m in sent]
    return [orch.sealer.open_json(m, orch.keys.outbox())["subject"] for m in sent]


def calls_of(orch: Orchestrator, tid: str) -> list[str]:
    return [e["call_id"] for e in orch.trace(tid) if e["kind"] == "tool_call"]


def test_a_value_written_before_encryption_is_refused_until_graphwright_seal(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, client: redis.Redis
) -> None:
    plain = Orchestrator(settings=settings, model=OfflineChatModel())
    with running(plain) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create(metadata={"codename": "Okapi"})["thread_id"]
        sdk.runs.wait(
            tid, "agent", command=approve(sdk.runs.wait(tid, "agent", input={"goal": GOAL}))
        )
        gated = sdk.runs.wait(tid, "agent", input={"goal": LATER})  # left at its gate
        sdk.crons.create("agent", schedule="0 0 1 1 *", input={"goal": "Cron Quokka"})
        sdk.assistants.create("agent", name="Assistant Axolotl")
    plain.store.put(("notes", "alice"), "n1", {"text": "Diary Dugong"})
    before = reads(plain, tid)
    assert outbox(plain) == ["Plain Pangolin"] and before["note"] == {"text": "Diary Dugong"}
    assert len(before["records"]) == 1 and "li@example.com" in before["records"][0]
    assert b"Plain Pangolin" in everything(client, settings.key_prefix)

    monkeypatch.setenv(KEYS_ENV, KEY.decode())
    sealed = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    with pytest.raises(CorruptCheckpointError, match="not sealed") as caught:
        sealed.meta(tid)
    assert sealed.keys.meta(tid) in str(caught.value)
    for read in (
        lambda: crons_of(sealed).search(),
        lambda: AssistantStore.of(sealed).all(),
        lambda: sealed.state(tid),
        lambda: sealed.trace(tid),
    ):
        with pytest.raises(CorruptCheckpointError, match="not sealed"):
            read()

    assert '"values_sealed": 0' not in cli(monkeypatch, settings, "seal")
    assert reads(sealed, tid) == before
    stored = everything(client, settings.key_prefix)
    assert not [s for s in PLAIN if s in stored]
    with running(sealed) as svc:  # the migrated checkpoint resumes under encryption
        sdk = get_sync_client(url=svc.url, api_key=None)
        assert [t["thread_id"] for t in sdk.threads.search(metadata={"codename": "Okapi"})] == [tid]
        done = sdk.runs.wait(tid, "agent", command=approve(gated))
    assert "Sent 'Sealed Sloth'" in done["answer"]
    assert outbox(sealed) == ["Plain Pangolin", "Sealed Sloth"]
    stored = everything(client, settings.key_prefix)
    assert not [s for s in [*PLAIN, b"Sealed Sloth"] if s in stored]


def gws1(key: bytes, plain: bytes) -> bytes:
    """A value sealed the old way: the raw key, no associated data."""
    kid = hashlib.sha256(b"graphwright-key-id" + key).digest()[:8]
    nonce = b"\x01" * 12
    body, tag = AES.new(key, AES.MODE_GCM, nonce=nonce).encrypt_and_digest(plain)
    return b"GWS1" + kid + nonce + tag + body


def test_old_format_values_open_and_rekey_reseals_crons_and_assistants(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, client: redis.Redis
) -> None:
    monkeypatch.setenv(KEYS_ENV, KEY.decode())
    orch = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    cron = crons_of(orch).create(
        payload={"input": {"goal": "old"}}, schedule="0 0 1 1 *", assistant_id="agent"
    )
    assistant = AssistantStore.of(orch).create(graph_id="agent", name="Old Otter")
    aid, cid = assistant["assistant_id"], cron["cron_id"]
    places = [
        (orch.keys.crons(), cid),
        (orch.keys.assistants(), aid),
        (orch.keys.assistant_versions(aid), "1"),
    ]
    docs = [crons_of(orch).get(cid), AssistantStore.of(orch).get(aid)]
    for key, field in places:  # as an older graphwright sealed them
        opened = orch.sealer.open(client.hget(key, field), key, field)  # type: ignore[arg-type]
        client.hset(key, field, gws1(KEY, opened))
    assert crons_of(orch).get(cid)["payload"] == docs[0]["payload"]
    assert AssistantStore.of(orch).get(aid)["name"] == "Old Otter"

    cli(monkeypatch, settings, "rekey")
    for key, field in places:
        assert client.hget(key, field).startswith(b"GWS2")  # type: ignore[union-attr]
    assert crons_of(orch).get(cid)["payload"] == docs[0]["payload"]
    assert AssistantStore.of(orch).get(aid) == docs[1]


def test_keys_are_derived_with_hkdf_and_values_bind_their_place() -> None:
    sealed = Sealer((KEY,)).seal(b"secret", "gw:a", "f")
    nonce, tag, body = sealed[12:24], sealed[24:40], sealed[40:]
    derived = HKDF(KEY, 32, b"graphwright", SHA256, context=b"graphwright seal v2")
    cipher = AES.new(derived, AES.MODE_GCM, nonce=nonce)
    cipher.update(b"gw-place\x00gw:a\x00f")
    assert cipher.decrypt_and_verify(body, tag) == b"secret"
    with pytest.raises(ValueError):  # the raw key opens nothing
        AES.new(KEY, AES.MODE_GCM, nonce=nonce).decrypt_and_verify(body, tag)


def test_the_places_graphwright_seal_covers_include_every_sealed_field() -> None:
    from graphwright.server.records.run_store import SEALED_RUN
    from graphwright.thread_meta import SEALED_META

    places = {p.glob: p.fields for p in Keys(prefix="p").sealed_places()}
    assert places["p:{*}:meta"] == {f.encode() for f in SEALED_META}
    assert places["p:{*}:runrec:*"] == SEALED_RUN
    for whole in (
        "p:{crons}:all",
        "p:{assistants}:latest",
        "p:{assistants}:versions:*",
        "p:calendar",
        "p:outbox",
        "{p:outbox}:ids",
    ):
        assert places[whole] is None


def test_a_calendar_booked_before_encryption_still_refuses_an_overlap_after_seal(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, client: redis.Redis
) -> None:
    keys = Keys(prefix=settings.key_prefix, sealer=Sealer((KEY,)))
    legacy = {
        "id": "e0",
        "title": "Old Review",
        "start_time": "2026-12-01T10:00",
        "end_time": "2026-12-01T11:00",
    }
    client.hset(keys.calendar(), "e0", json.dumps(legacy))  # as graphwright booked it before slots
    monkeypatch.setenv(KEYS_ENV, KEY.decode())
    cli(monkeypatch, settings, "seal")
    assert b"Old Review" not in client.hget(keys.calendar(), "e0")  # type: ignore[operator]
    tools = ToolExecutor(build_registry(), client, keys=keys)
    clash = tools.execute(
        ToolCall(
            name="create_event",
            id="c1",
            args={
                "title": "Lunch",
                "start_time": "2026-12-01T10:30",
                "end_time": "2026-12-01T11:30",
            },
        ),
        thread_id="t1",
    )
    assert clash.error is not None and "Old Review" in clash.error.message
    day = tools.execute(
        ToolCall(name="get_schedule", id="c2", args={"date": "2026-12-01"}), thread_id="t1"
    )
    assert [e["title"] for e in day.result] == ["Old Review"]


def test_runs_the_scripts_cancel_read_under_encryption(client: redis.Redis, prefix: str) -> None:
    store = RunStore(client, Keys(prefix=prefix, sealer=Sealer((KEY,))))
    body = RunCreate(
        assistant_id="agent", input={"goal": "Pending Puffin"}, multitask_strategy="interrupt"
    )
    first = store.create("t1", body, queue=False)
    second = store.create("t1", body, queue=False)  # cancels the first in its script
    third = store.create("t2", body, queue=False)
    assert store.cancel("t2", third.run_id) == "cancelled"
    assert store.get("t1", first.run_id).status == store.get("t2", third.run_id).status
    assert store.raw("t1", first.run_id)["error"] == "cancelled by a newer run"
    assert store.body("t1", second.run_id).input == {"goal": "Pending Puffin"}
    assert b"Pending Puffin" not in everything(client, prefix)
