"""Differential testing: the same SDK calls against the reference Agent Server (`langgraph
dev`, in memory) and against `graphwright serve`, compared call by call.

Answers are compared after `normalize`: ids become `<id:N>` in order of first sight
(so the same call sequence gives the same tokens on both servers), times become
`<time>`, and each step may name paths that legitimately differ. An HTTP error is
compared by its status code.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk.client import SyncLangGraphClient

from graphwright.testing.until import scaled
from tests.support.paths import ROOT

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")  # interrupt ids: a hash of the task's path, ids in it
# Values that tell the server's build and address, not the protocol: the keys stay compared.
ENVIRONMENT = frozenset(
    {"langgraph_api_version", "langgraph_plan", "langgraph_api_url", "lc_versions"}
)
# Values that are a moment (epoch milliseconds): the keys stay compared.
MOMENTS = frozenset({"__request_start_time_ms__"})
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reference_binary() -> str:
    """The reference's `langgraph` executable, installed apart by scripts/reference-server."""
    out = subprocess.run(
        [str(ROOT / "scripts" / "reference-server")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()[-1]


@contextmanager
def reference_server(graphs: dict[str, str], workdir: Path) -> Iterator[str]:
    """`langgraph dev` serving `graphs` (name -> `path.py:variable`) on a free port."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": graphs}))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    env.update(PYTHONPATH=str(ROOT), LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false")
    log = (workdir / "server.log").open("wb")
    proc = subprocess.Popen(
        [
            reference_binary(),
            "dev",
            "--no-browser",
            "--no-reload",
            "--port",
            str(port),
            "--config",
            "langgraph.json",
        ],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + scaled(120)
        while True:
            assert proc.poll() is None, (workdir / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the reference server did not start"
            try:
                if httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=scaled(15))
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class Normalizer:
    """Ids to `<id:N>` by first sight, times to `<time>`; one per server."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str):
            if TIME.match(value):
                return "<time>"
            return UUID.sub(
                lambda m: self.ids.setdefault(m.group(0), f"<id:{len(self.ids)}>"), value
            )
        return value


def mask(value: Any) -> Any:
    """Ids to `<id>` and times to `<time>`, everywhere (keys too), the values of the
    MOMENTS keys to `<time>` and of the ENVIRONMENT keys to `<env>`: what a comparison
    of two servers' answers must not see."""
    if isinstance(value, dict):
        return {
            mask(k) if isinstance(k, str) else k: "<env>"
            if k in ENVIRONMENT
            else "<time>"
            if k in MOMENTS
            else mask(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask(v) for v in value]
    if isinstance(value, str):
        return "<time>" if TIME.match(value) else HEX_ID.sub("<id>", UUID.sub("<id>", value))
    return value


def differences(want: Any, have: Any, path: str = "$") -> list[str]:
    """Every place two JSON values differ, recursively and in both directions: a key only one
    side has is a difference, as is a list of another length or a leaf of another value."""
    if isinstance(want, dict) and isinstance(have, dict):
        out = [f"{path}.{k}: only the reference" for k in want if k not in have]
        out += [f"{path}.{k}: only graphwright" for k in have if k not in want]
        for key in (k for k in want if k in have):
            out += differences(want[key], have[key], f"{path}.{key}")
        return out
    if isinstance(want, list) and isinstance(have, list):
        if len(want) != len(have):
            return [f"{path}: {len(want)} items in the reference, {len(have)} in graphwright"]
        return [
            d
            for i, (w, h) in enumerate(zip(want, have, strict=True))
            for d in differences(w, h, f"{path}[{i}]")
        ]
    return [] if want == have else [f"{path}: reference {want!r:.120}, graphwright {have!r:.120}"]


def drop(value: Any, path: str) -> Any:
    """Remove a dotted path (`*` matches every key or list item) from a copy of `value`."""
    head, _, rest = path.partition(".")
    if isinstance(value, list):
        return [drop(v, rest) for v in value] if head == "*" and rest else value
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for key in list(out) if head == "*" else [head]:
        if key in out:
            if rest:
                out[key] = drop(out[key], rest)
            else:
                del out[key]
    return out


@dataclass
class Step:
    """One SDK call; `ignore` names answer paths that legitimately differ (say why in `note`)."""

    name: str
    call: Callable[[SyncLangGraphClient, dict[str, Any]], Any]
    ignore: tuple[str, ...] = ()
    note: str = ""
    known: str = ""  # a difference kept on purpose (a reference defect): shown, not asserted


@dataclass
class Outcome:
    step: Step
    reference: Any
    ours: Any
    same: bool = field(init=False)

    def __post_init__(self) -> None:
        self.same = self.reference == self.ours


def answer(client: SyncLangGraphClient, ctx: dict[str, Any], step: Step, norm: Normalizer) -> Any:
    try:
        try:
            value = step.call(client, ctx)
        except httpx.TransportError:  # a server may close a kept-alive connection after a 500
            value = step.call(client, ctx)
    except httpx.HTTPStatusError as exc:
        value = {"http_error": exc.response.status_code}
    ctx[step.name] = value
    shaped = json.loads(json.dumps(value, default=str))
    for path in step.ignore:
        shaped = drop(shaped, path)
    return norm(shaped)


def compare(
    steps: list[Step], reference: SyncLangGraphClient, ours: SyncLangGraphClient
) -> list[Outcome]:
    """Run the steps in order on both servers (each with its own context and ids)."""
    ref_ctx: dict[str, Any] = {}
    our_ctx: dict[str, Any] = {}
    ref_norm, our_norm = Normalizer(), Normalizer()
    return [
        Outcome(s, answer(reference, ref_ctx, s, ref_norm), answer(ours, our_ctx, s, our_norm))
        for s in steps
    ]


def table(outcomes: list[Outcome], title: str) -> str:
    lines = [
        f"# {title}",
        "",
        "Generated by the differential test; `ignored` lists answer paths",
        "that differ on purpose (the note says why).",
        "",
        "| # | call | same answer | ignored | note |",
        "|---|---|---|---|---|",
    ]
    for i, o in enumerate(outcomes, 1):
        ignored = ", ".join(f"`{p}`" for p in o.step.ignore) or "-"
        verdict = "yes" if o.same else "no, known" if o.step.known else "NO"
        lines.append(
            f"| {i} | `{o.step.name}` | {verdict} | {ignored} | {o.step.note or o.step.known} |"
        )
    same = sum(o.same for o in outcomes)
    known = sum(not o.same and bool(o.step.known) for o in outcomes)
    lines += [
        "",
        f"{same} of {len(outcomes)} calls answer like the reference; {known} differ on "
        "purpose (see their notes).",
        "",
    ]
    return "\n".join(lines)
