"""Drive a served template through `langgraph-sdk` and compare two servers' outcomes.

An outcome is what the SDK gets for one call (run status, the output of `runs.wait`,
the thread state's keys and `next`, the history's length, the store's items) plus the
model and embedding requests the call caused. Ids, UUIDs and times are masked, so two
servers that behave alike compare equal.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, cast

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import APIError
from langgraph_sdk.schema import Config

from bench.templates_scenarios import Call
from graphwright.testing.scripted_openai import ScriptedOpenAI
from graphwright.testing.until import scaled

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CHATCMPL = re.compile(r"chatcmpl-[0-9a-f]+")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*(\+00:00|Z)?")
VOLATILE = {"id", "run_id", "thread_id", "checkpoint_id", "created_at", "updated_at"}


@dataclass(frozen=True, kw_only=True)
class Outcome:
    status: str
    output: Any = None
    state_keys: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    history: int | None = None
    store_items: int | str | None = None  # a count, or the SDK's error reading them
    model_calls: int = 0
    embedding_calls: int = 0
    assistant: str | None = None  # the graph's default assistant's name
    schemas: tuple[tuple[str, tuple[str, ...]], ...] = ()  # schema -> its properties
    stream: str = ""  # the same call streamed (values, updates, messages): its events
    drawing: str = ""  # the assistant's graph as Studio fetches it: its nodes and edges
    steps: str = ""  # each checkpoint of the history, oldest first: source:step[next]
    state: Any = None  # the thread's state values, masked

    def summary(self) -> str:
        if self.history is None:
            return self.status
        store = f"; store {self.store_items}" if self.store_items is not None else ""
        return (
            f"{self.status}; state {','.join(self.state_keys) or '-'}; history "
            f"{self.history}{store}; model {self.model_calls}"
            + (f"; embed {self.embedding_calls}" if self.embedding_calls else "")
        )


def drive(url: str, call: Call, model: ScriptedOpenAI, threads: list[str]) -> Outcome:
    """One call as a user makes it.

    A thread (the previous call's for a follow-up; the ids are kept in `threads`), `runs.wait`, then
    what the thread holds.
    """
    sdk = get_sync_client(url=url, api_key=None, timeout=(scaled(10), scaled(180), None, None))
    asked, embedded = len(model.side_requests), len(model.embedding_requests)
    try:
        found = sdk.assistants.search(graph_id=call.graph, limit=1)
        assistant = found[0] if found else None
        schemas = (
            _schemas(sdk.assistants.get_schemas(assistant["assistant_id"])) if assistant else ()
        )
        drawing = _drawing(sdk.assistants.get_graph(assistant["assistant_id"])) if assistant else ""
        thread = threads[-1] if call.follow_up and threads else sdk.threads.create()["thread_id"]
        threads.append(thread)
        output = sdk.runs.wait(
            thread,
            call.graph,
            input=call.input,
            context=call.context,
            config=cast(Config | None, call.config),
            raise_error=False,
        )
        runs = sdk.runs.list(thread)
        state = sdk.threads.get_state(thread)
        history = sdk.threads.get_history(thread, limit=1000)
        events = [
            _event(part.event, part.data)
            for part in sdk.runs.stream(
                sdk.threads.create()["thread_id"],
                call.graph,
                input=call.input,
                context=call.context,
                config=cast(Config | None, call.config),
                stream_mode=["values", "updates", "messages-tuple"],
            )
        ]
    except (APIError, httpx.HTTPError) as exc:
        return Outcome(
            status=f"SDK error: {_short(exc)}", model_calls=len(model.side_requests) - asked
        )
    items: int | str | None = None
    if call.store:
        try:
            items = len(sdk.store.search_items(list(call.store), limit=1000)["items"])
        except (APIError, httpx.HTTPError) as exc:
            items = f"SDK error: {_short(exc, 80)}"
    status = str(runs[0]["status"]) if runs else "no run"
    if isinstance(output, dict) and "__error__" in output:
        status = f"{status}: {_short(output['__error__'])}"
    return Outcome(
        status=status,
        output=mask(output),
        state_keys=tuple(sorted(state["values"] or {}))
        if isinstance(state["values"], dict)
        else (),
        next=tuple(state["next"]),
        history=len(history),
        store_items=items,
        model_calls=len(model.side_requests) - asked,
        embedding_calls=len(model.embedding_requests) - embedded,
        assistant=str(assistant["name"]) if assistant else None,
        schemas=schemas,
        stream=_runs_of(events),
        drawing=drawing,
        state=mask(state["values"]),
        steps=" ".join(_step(h) for h in reversed(history)),
    )


def _step(snapshot: Any) -> str:
    meta = snapshot.get("metadata") or {}
    return f"{meta.get('source')}:{meta.get('step')}[{','.join(snapshot.get('next') or [])}]"


def _drawing(got: Any) -> str:
    """`nodes a b c; edges a>b b>c`, sorted: what Studio draws, without positions."""
    nodes = sorted(str(n.get("id")) for n in got.get("nodes", []))
    edges = sorted(
        f"{e.get('source')}>{e.get('target')}" + ("?" if e.get("conditional") else "")
        for e in got.get("edges", [])
    )
    return f"nodes {' '.join(nodes)}; edges {' '.join(edges)}"


def _event(name: str, data: Any) -> str:
    """An event's name, with the keys of a `values` or `updates` payload."""
    if name in ("values", "updates") and isinstance(data, dict):
        return f"{name}[{' '.join(sorted(data))}]"
    return name


def _runs_of(events: list[str]) -> str:
    """`a, b×3, c`: the events in order, repeats counted."""
    out: list[list[Any]] = []
    for event in events:
        if out and out[-1][0] == event:
            out[-1][1] += 1
        else:
            out.append([event, 1])
    return ", ".join(f"{e}×{n}" if n > 1 else str(e) for e, n in out)


def _schemas(got: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each schema the assistant reports (input, output, state, context, config).

    The names of its top-level properties, or of its definitions' where it is a reference.
    """
    out = []
    for name, schema in sorted(dict(got).items()):
        if not isinstance(schema, dict):
            continue
        props = schema.get("properties") or {}
        if not props and "$ref" in schema:
            target = str(schema["$ref"]).rsplit("/", 1)[-1]
            props = (
                (schema.get("$defs") or schema.get("definitions") or {}).get(target) or {}
            ).get("properties") or {}
        out.append((name, tuple(sorted(props))))
    return tuple(out)


def mask(value: Any) -> Any:
    """`value` with what differs between any two runs (ids, UUIDs, times) masked."""
    if isinstance(value, dict):
        return {
            k: "<id>" if k in VOLATILE and value[k] is not None else mask(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask(v) for v in value]
    if isinstance(value, str):
        return TIME.sub("<time>", CHATCMPL.sub("chatcmpl-<id>", UUID.sub("<uuid>", value)))
    return value


def differences(ours: Outcome, theirs: Outcome) -> list[str]:
    """Each field (and each path inside the output) where the two outcomes differ."""
    if ours.history is None or theirs.history is None:  # one side has no run to compare
        return [] if ours.status == theirs.status else [f"status: {ours.status} vs {theirs.status}"]
    left, right = asdict(ours), asdict(theirs)
    found: list[str] = []
    for key in left:
        if key == "output":
            found += _paths("output", left[key], right[key])
        elif left[key] != right[key]:
            found.append(f"{key}: {_short(left[key])} vs {_short(right[key])}")
    return found


def _paths(at: str, a: Any, b: Any) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                side = "graphwright" if key not in a else "the reference"
                out.append(f"{at}.{key}: missing on {side}")
            else:
                out += _paths(f"{at}.{key}", a[key], b[key])
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _paths(f"{at}[{i}]", x, y)
        ]
    return [] if a == b else [f"{at}: {_short(a)} vs {_short(b)}"]


def _short(value: Any, width: int = 160) -> str:
    text = str(value).replace("\n", " ").replace("|", "/")
    return text if len(text) <= width else text[: width - 3] + "..."
