"""Encryption at rest: after a whole run through the HTTP service (gate, resume, memory,
trace, store, a cron, an assistant, the outbox) no key in Redis holds the user's text,
the tool's arguments or its result in plaintext; after a key rotation old data still
reads, and `rekey` moves it to the new key."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright.checkpoints.sealed import KEYS_ENV, MAGIC, key_id
from graphwright.cli import app
from graphwright.offline import OfflineChatModel
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.records.cron_store import CronStore
from graphwright.settings import Settings
from graphwright.testing.service import running

OLD, NEW = b"o" * 32, b"n" * 32
GOAL = (
    'My name is Zorblatt. Email li@example.com with the subject "Quarterly Zebra" '
    "saying the vault code is 7741."
)
SECRETS = [
    b"Zorblatt",
    b"Quarterly Zebra",
    b"vault code",
    b"li@example.com",
    b"Sent '",
    b"Zebra secret meta",
    b"Zebra diary",
    b"Okapi",
    b"Cron Quokka",
    b"Assistant Axolotl",
    b"Context Capybara",
]
SECRETS += [quote(s.decode(), safe="").encode() for s in SECRETS]  # as key names escape them
META = {"project": "Zebra secret meta", "codename": "Okapi"}  # the thread index's pairs


def everything(client: redis.Redis, prefix: str) -> dict[bytes, bytes]:
    """Every key under the prefix (or opening with its hash tag) with all it holds."""
    out: dict[bytes, bytes] = {}
    for key in [*client.scan_iter(match=f"{prefix}:*"), *client.scan_iter(match=f"{{{prefix}:*")]:
        kind = client.type(key).decode()  # type: ignore[union-attr]  # bytes client
        parts: list[Any]
        if kind == "string":
            parts = [client.get(key)]
        elif kind == "hash":
            parts = [b for kv in client.hgetall(key).items() for b in kv]  # type: ignore[union-attr]
        elif kind == "list":
            parts = client.lrange(key, 0, -1)  # type: ignore[assignment]
        elif kind == "set":
            parts = list(client.smembers(key))  # type: ignore[arg-type]
        elif kind == "zset":
            parts = client.zrange(key, 0, -1)  # type: ignore[assignment]
        else:
            parts = [b for _, fields in client.xrange(key) for kv in fields.items() for b in kv]  # type: ignore[union-attr]
        out[key] = key + b"".join(p for p in parts if isinstance(p, bytes))
    return out


def encrypted(settings: Settings) -> Settings:
    return Settings(
        _env_file=None,
        REDIS_URL=settings.redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=settings.key_prefix,
        GRAPHWRIGHT_ENCRYPT=True,
    )


def found_by_metadata(orch: Orchestrator) -> list[str]:
    """The threads a metadata search finds (the thread index's keyed-hash sets)."""
    with running(orch, worker=False) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        return [t["thread_id"] for t in sdk.threads.search(metadata={"codename": "Okapi"})]


def what_reads(orch: Orchestrator, tid: str) -> dict[str, Any]:
    assistant = next(a for a in AssistantStore.of(orch).all() if a["name"] == "Assistant Axolotl")
    return {
        "meta": orch.meta(tid)["metadata"],
        "answer": orch.state(tid).values["answer"],
        "trace": [e["kind"] for e in orch.trace(tid)],
        "memory": [m.value for m in orch.memories("alice")],
        "note": orch.store.get(("notes", "alice"), "n1").value,  # type: ignore[union-attr]
        "crons": [c["payload"]["input"] for c in CronStore(orch.client, orch.keys).search()],
        "assistant": (assistant["config"], assistant["context"]),
    }


def test_nothing_the_user_or_the_tools_said_is_stored_in_plaintext_and_keys_rotate(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, client: redis.Redis
) -> None:
    monkeypatch.setenv(KEYS_ENV, OLD.decode())
    orch = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    with running(orch) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create(metadata=META)["thread_id"]
        assert [t["thread_id"] for t in sdk.threads.search(metadata={"codename": "Okapi"})] == [tid]
        gated = sdk.runs.wait(tid, "agent", input={"goal": GOAL}, metadata={"user_id": "alice"})
        call = gated["__interrupt__"][0]["value"]["calls"][0]
        assert call["args"]["subject"] == "Quarterly Zebra"
        done = sdk.runs.wait(
            tid,
            "agent",
            command={"resume": {call["id"]: {"action": "approve", "digest": call["digest"]}}},
        )
        assert "Sent 'Quarterly Zebra'" in done["answer"]
        orch.store.put(("notes", "alice"), "n1", {"text": "Zebra diary"})
        sdk.crons.create("agent", schedule="0 0 1 1 *", input={"goal": "Cron Quokka"})
        sdk.assistants.create(
            "agent",
            name="Assistant Axolotl",
            config={"tags": ["Assistant Axolotl"]},
            context={"note": "Context Capybara"},
        )
        before = what_reads(orch, tid)
    assert before["memory"] == ["Zorblatt"] and {"tool_call", "remember"} <= set(before["trace"])
    assert before["crons"] == [{"goal": "Cron Quokka"}]
    assert client.llen(orch.keys.outbox()) == 1  # the e-mail, sealed like the rest

    stored = everything(client, settings.key_prefix)
    assert {k.split(b":")[-1] for k in stored} >= {b"events", b"meta"}  # the scan saw the run
    for key, content in stored.items():
        leaked = [s for s in SECRETS if s in content]
        assert not leaked, (key, leaked)

    # Rotation: the new key in front; everything written with the old one still reads.
    monkeypatch.setenv(KEYS_ENV, f"{NEW.decode()},{OLD.decode()}")
    rotated = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    assert what_reads(rotated, tid) == before
    assert found_by_metadata(rotated) == [tid]  # indexed under the old key, found under both
    monkeypatch.setenv(KEYS_ENV, NEW.decode())
    with pytest.raises(CorruptCheckpointError, match=key_id(OLD).hex()):
        Orchestrator(settings=encrypted(settings), model=OfflineChatModel()).trace(tid)

    # `graphwright rekey` re-seals it all with the new key; then the old key can go.
    monkeypatch.setenv(KEYS_ENV, f"{NEW.decode()},{OLD.decode()}")
    monkeypatch.setenv("REDIS_URL", settings.redis_url or "")
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", settings.key_prefix)
    monkeypatch.setenv("GRAPHWRIGHT_ENCRYPT", "1")
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["rekey", "--json"])
    assert result.exit_code == 0, result.output
    assert '"values_resealed"' in result.output and '"threads_reindexed": 1' in result.output
    after = everything(client, settings.key_prefix)
    assert not [k for k, v in after.items() if MAGIC + key_id(OLD) in v]
    assert [k for k, v in after.items() if MAGIC + key_id(NEW) in v]
    monkeypatch.setenv(KEYS_ENV, NEW.decode())
    only_new = Orchestrator(settings=encrypted(settings), model=OfflineChatModel())
    assert what_reads(only_new, tid) == before
    assert found_by_metadata(only_new) == [tid]  # re-indexed under the new key
