"""LangGraph's public templates, unchanged, on `graphwright serve` and on `langgraph dev`.

`python -m bench.templates DIR...`, each DIR a clone of a template. For each: a venv with
graphwright's wheel and the template (`pip install -e`, as its README says), another with
`langgraph-cli[inmem]` and the template; each server serves the template's own
`langgraph.json`; one run per graph through `langgraph-sdk`, the model being the test
kit's scripted OpenAI-compatible server (named in the template's own model field as
`openai/scripted`, reached through OPENAI_BASE_URL). Prints a Markdown table comparing
what the SDK got from each, and notes on what could not run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.templates_compare import Outcome, differences, drive
from bench.templates_scenarios import Scenario, scenario
from bench.templates_serve import ServerExited, graphwright_serve, langgraph_dev, user_env
from bench.templates_tokens import tiktoken_cache
from bench.templates_venvs import ROOT, Venv, ensure, versions
from graphwright.testing.redis_servers import redis_server
from graphwright.testing.scripted_openai import ScriptedOpenAI

PAGE = b"<html><body><h1>Barn owl</h1><p>The barn owl hunts at night by sound.</p></body></html>"


@dataclass(frozen=True, kw_only=True)
class Row:
    template: str
    graph: str
    ours: Outcome
    theirs: Outcome

    def markdown(self) -> str:
        found = differences(self.ours, self.theirs)
        cells = [
            self.template,
            self.graph,
            self.ours.summary(),
            self.theirs.summary(),
            "<br>".join(found) or "none",
        ]
        return "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.templates", description=__doc__)
    parser.add_argument("dirs", nargs="+", type=Path, help="clones of LangGraph templates")
    parser.add_argument(
        "--details", type=Path, help="also write every outcome, in full, to this JSON file"
    )
    parser.add_argument(
        "--queue",
        action="store_true",
        help="graphwright serve --queue with a graphwright worker beside it",
    )
    parser.add_argument(
        "--venvs",
        type=Path,
        default=ROOT / ".template-venvs",
        help="where the venvs are made and reused",
    )
    args = parser.parse_args(argv)
    rows: list[Row] = []
    notes: list[str] = []
    with (
        redis_server() as redis,
        page_server() as page_url,
        tempfile.TemporaryDirectory(prefix="gw-templates-") as scratch,
    ):
        tokens = tiktoken_cache(args.venvs)
        base_env = {"REDIS_URL": redis.url, "TIKTOKEN_CACHE_DIR": str(tokens)}
        for folder in args.dirs:
            template = folder.resolve()
            name = tomllib.loads((template / "pyproject.toml").read_text())["project"]["name"]
            plan = scenario(name, page_url)
            if plan is None:
                notes.append(f"{template.name}: no scenario for project {name!r}; skipped")
                continue
            notes += plan.limits
            print(f"{template.name}: preparing venvs", file=sys.stderr, flush=True)
            venvs = {
                kind: ensure(kind, template, args.venvs) for kind in ("graphwright", "reference")
            }
            outcomes = {
                kind: run_all(
                    venv, template, plan, base_env, Path(scratch), notes, queue=args.queue
                )
                for kind, venv in venvs.items()
            }
            for i, call in enumerate(plan.calls):
                graph = f"{call.graph} ({call.label})" if call.label else call.graph
                rows.append(
                    Row(
                        template=template.name,
                        graph=graph,
                        ours=outcomes["graphwright"][i],
                        theirs=outcomes["reference"][i],
                    )
                )
    print(table(rows, notes))
    if args.details:
        args.details.write_text(json.dumps([asdict(r) for r in rows], indent=1, default=str))
    return 0


def run_all(
    venv: Venv,
    template: Path,
    plan: Scenario,
    base_env: dict[str, str],
    scratch: Path,
    notes: list[str],
    *,
    queue: bool = False,
) -> list[Outcome]:
    """Every call of `plan` on one server; an outcome per call whatever failed."""
    who = "graphwright" if venv.kind == "graphwright" else "langgraph dev"
    if not venv.ok:
        notes.append(f"{template.name}, {who}: install failed: {venv.error}")
        return [Outcome(status="not installable (see notes)") for _ in plan.calls]
    print(f"{template.name}: serving with {who}", file=sys.stderr, flush=True)
    notes.append(f"{template.name}, {who}'s venv: {versions(venv)}")
    log = scratch / f"{template.name}-{venv.kind}.log"
    with ScriptedOpenAI() as model:
        model.respond("", plan.answer)  # every request: the answer is the request's function
        env = user_env(
            **base_env,
            OPENAI_BASE_URL=model.base_url,
            OPENAI_API_KEY="sk-scripted",
            GRAPHWRIGHT_KEY_PREFIX=f"tpl{uuid.uuid4().hex[:8]}",
        )
        try:
            if venv.kind == "graphwright":
                server = graphwright_serve(venv, template, env, log, queue=queue)
            else:  # the reference writes its state into the folder it serves: a copy
                server = langgraph_dev(venv, copy_of(template, scratch / "reference"), env, log)
            with server as url:
                threads: list[str] = []
                return [drive(url, call, model, threads) for call in plan.calls]
        except ServerExited as exc:
            notes.append(f"{template.name}, {who}: the server exited: {exc}")
            return [Outcome(status="server exited (see notes)") for _ in plan.calls]


def copy_of(template: Path, under: Path) -> Path:
    target = under / template.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(
        template,
        target,
        ignore=shutil.ignore_patterns(".git", ".langgraph_api", "__pycache__", ".venv"),
    )
    return target


@contextmanager
def page_server() -> Iterator[str]:
    """A web page on loopback, for the templates' scraping tools."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's method naming
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serving = threading.Thread(target=http.serve_forever, daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{http.server_address[1]}/barn-owl.html"
    finally:
        http.shutdown()
        http.server_close()


def table(rows: list[Row], notes: list[str]) -> str:
    head = [
        "| template | graph | graphwright | reference (`langgraph dev`) | differences |",
        "|---|---|---|---|---|",
    ]
    lines = head + [row.markdown() for row in rows]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {note}" for note in notes]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
