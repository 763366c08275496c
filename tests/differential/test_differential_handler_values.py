"""The value an `Auth` handler is shown, on the reference server (`langgraph dev`) and on
graphwright, under the same handlers (tests/support/auth_shapes.py): the same keys for every
resource and action the SDK reaches, and the path's thread id where a body names another."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graphwright import Orchestrator
from graphwright.settings import Settings
from graphwright.testing.service import running
from tests.support import auth_shapes
from tests.support.langgraph_dev import langgraph_dev
from tests.support.paths import ROOT, SUPPORT

# Slow: the reference Agent Server shows its handlers values
pytestmark = pytest.mark.slow

YEARLY = "0 0 1 1 *"
# Values one server shows a handler and the other does not, and why.
ONLY_THEIRS = {
    "threads.search": [[], None],  # the reference's own calls around a run
    "threads.update": [["action", "metadata", "thread_id"], None],  # likewise
}
ONLY_OURS = {
    # deleting an assistant deletes only the crons on it the caller may delete (the
    # reference deletes them all, asking no handler)
    "crons.delete": [["cron_id"], None],
}


def calls(c: SyncLangGraphClient, tid: str, other: str) -> list[Callable[[], Any]]:
    """One SDK call per resource and action (and the spoofed PATCH), in order."""
    return [
        lambda: c.threads.create(thread_id=tid, metadata={"topic": "t"}),
        lambda: c.threads.create(thread_id=other),
        lambda: c.threads.get(tid),
        lambda: c.threads.update(tid, metadata={"topic": "u"}),
        lambda: c.http.client.patch(
            f"/threads/{tid}", json={"thread_id": other, "metadata": {"x": 1}}
        ),
        lambda: c.threads.search(metadata={"topic": "u"}),
        lambda: c.runs.wait(tid, "counter", input={"goal": "g"}),
        lambda: c.threads.update_state(tid, {"items": ["x"]}),
        lambda: c.assistants.create("counter", name="a", assistant_id=ASSISTANT),
        lambda: c.assistants.get(ASSISTANT),
        lambda: c.assistants.update(ASSISTANT, name="b"),
        lambda: c.assistants.search(graph_id="counter"),
        lambda: c.crons.create("counter", schedule=YEARLY, input={"goal": "c"}),
        lambda: c.crons.search(),
        lambda: c.store.put_item(["notes"], "k", {"v": 1}),
        lambda: c.store.get_item(["notes"], "k"),
        lambda: c.store.search_items(["notes"]),
        lambda: c.store.list_namespaces(prefix=["notes"]),
        lambda: c.store.delete_item(["notes"], "k"),
        lambda: c.assistants.delete(ASSISTANT),
        lambda: c.threads.delete(other),
    ]


ASSISTANT = str(uuid.uuid4())


def shapes(client: SyncLangGraphClient, seen: Path) -> dict[str, list[Any]]:
    tid, other = str(uuid.uuid4()), str(uuid.uuid4())
    for call in calls(client, tid, other):
        with contextlib.suppress(Exception):  # the answers are not what is compared here
            call()
    found: dict[str, list[Any]] = {}
    for line in seen.read_text().splitlines():
        note = json.loads(line)
        spoof = (
            "path" if note["thread_id"] == tid else "other" if note["thread_id"] == other else None
        )
        found.setdefault(note["what"], [])
        if (entry := [note["keys"], spoof]) not in found[note["what"]]:
            found[note["what"]].append(entry)
    return found


def test_handlers_see_the_values_the_reference_shows_them(
    tmp_path: Path, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "reference"
    root.mkdir()
    (root / "langgraph.json").write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"counter": f"{SUPPORT / 'plain_graphs.py'}:graph"},
                "auth": {"path": f"{SUPPORT / 'auth_shapes.py'}:auth"},
            }
        )
    )
    theirs, ours = tmp_path / "theirs.jsonl", tmp_path / "ours.jsonl"
    theirs.touch()
    ours.touch()
    monkeypatch.setenv("GW_AUTH_SHAPES", str(ours))
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.plain_graphs:register",
    )
    headers = {"Authorization": "Bearer x"}
    with langgraph_dev(root, env={"PYTHONPATH": str(ROOT), "GW_AUTH_SHAPES": str(theirs)}) as url:
        reference = shapes(get_sync_client(url=url, api_key=None, headers=headers), theirs)
    with running(Orchestrator(settings=settings), auth=auth_shapes.auth) as svc:
        graphwright = shapes(get_sync_client(url=svc.url, api_key=None, headers=headers), ours)
    for what, entry in ONLY_THEIRS.items():
        reference[what].remove(entry)
    for what, entry in ONLY_OURS.items():
        graphwright[what].remove(entry)
        if not graphwright[what]:
            del graphwright[what]
    differ = {
        k: (reference.get(k), graphwright.get(k))
        for k in sorted(set(reference) | set(graphwright))
        if reference.get(k) != graphwright.get(k)
    }
    assert not differ, "\n".join(
        f"{k}\n  reference: {r}\n  ours:      {g}" for k, (r, g) in differ.items()
    )
