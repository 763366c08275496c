"""Differential testing: the same SDK calls against the reference Agent Server (``langgraph
dev``, in memory) and against ``graphwright serve``, compared call by call.

Answers are compared after ``normalize``: ids become ``<id:N>`` in order of first sight
(so the same call sequence gives the same tokens on both servers), times become
``<time>``, and each step may name paths that legitimately differ. An HTTP error is
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

ROOT = Path(__file__).resolve().parent.parent
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reference_binary() -> str:
    """The reference's ``langgraph`` executable, installed apart by scripts/reference-server."""
    out = subprocess.run([str(ROOT / "scripts" / "reference-server")], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


@contextmanager
def reference_server(graphs: dict[str, str], workdir: Path) -> Iterator[str]:
    """``langgraph dev`` serving ``graphs`` (name -> ``path.py:variable``) on a free port."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": graphs}))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    env.update(PYTHONPATH=str(ROOT), LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false")
    log = (workdir / "server.log").open("wb")
    proc = subprocess.Popen([reference_binary(), "dev", "--no-browser", "--no-reload",
                             "--port", str(port), "--config", "langgraph.json"],
                            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
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
    """Ids to ``<id:N>`` by first sight, times to ``<time>``; one per server."""

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
            return UUID.sub(lambda m: self.ids.setdefault(m.group(0), f"<id:{len(self.ids)}>"), value)
        return value


def drop(value: Any, path: str) -> Any:
    """Remove a dotted path (``*`` matches every key or list item) from a copy of ``value``."""
    head, _, rest = path.partition(".")
    if isinstance(value, list):
        return [drop(v, rest) for v in value] if head == "*" and rest else value
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for key in (list(out) if head == "*" else [head]):
        if key in out:
            if rest:
                out[key] = drop(out[key], rest)
            else:
                del out[key]
    return out


@dataclass
class Step:
    """One SDK call; ``ignore`` names answer paths that legitimately differ (say why in ``note``)."""

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


def compare(steps: list[Step], reference: SyncLangGraphClient, ours: SyncLangGraphClient) -> list[Outcome]:
    """Run the steps in order on both servers (each with its own context and ids)."""
    ref_ctx: dict[str, Any] = {}
    our_ctx: dict[str, Any] = {}
    ref_norm, our_norm = Normalizer(), Normalizer()
    return [Outcome(s, answer(reference, ref_ctx, s, ref_norm), answer(ours, our_ctx, s, our_norm))
            for s in steps]


def table(outcomes: list[Outcome], title: str) -> str:
    lines = [f"# {title}", "", "Generated by the differential test; `ignored` lists answer paths",
             "that differ on purpose (the note says why).", "",
             "| # | call | same answer | ignored | note |", "|---|---|---|---|---|"]
    for i, o in enumerate(outcomes, 1):
        ignored = ", ".join(f"`{p}`" for p in o.step.ignore) or "-"
        verdict = "yes" if o.same else "no, known" if o.step.known else "NO"
        lines.append(f"| {i} | `{o.step.name}` | {verdict} | {ignored} | {o.step.note or o.step.known} |")
    same = sum(o.same for o in outcomes)
    known = sum(not o.same and bool(o.step.known) for o in outcomes)
    lines += ["", f"{same} of {len(outcomes)} calls answer like the reference; {known} differ on "
              "purpose (see their notes).", ""]
    return "\n".join(lines)
