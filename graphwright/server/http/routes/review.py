"""`/review`.

Pages where a reviewer reads the conversation, the pending calls and the run's path, and answers
every pending call at once.

With an API key set, the key is entered once on `/review/login` and kept in a signed
cookie; these routes accept that cookie or the `x-api-key` header, never a URL parameter.
Under custom auth (a `langgraph_sdk.Auth`) each request is authenticated by its handler
like any API call, and the `threads` handlers decide which threads the caller sees: the
list shows only those, another user's thread is a 404.
"""

from __future__ import annotations

import hmac
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict

from graphwright.drawing import mermaid_library
from graphwright.graphs.hitl import is_hitl_request
from graphwright.native import answer_of
from graphwright.orchestrator import Orchestrator
from graphwright.server.auth import browsers
from graphwright.server.auth.access import (
    Grant,
    admit_run,
    authority,
    current_user,
    decide,
    visible_thread,
)
from graphwright.server.http.deps import Orch, Svc, service
from graphwright.server.http.launch import Launcher
from graphwright.server.offload import offload
from graphwright.server.review import page as view
from graphwright.server.review import signed_cookie
from graphwright.server.schemas.run_bodies import CommandBody, RunCreate

router = APIRouter(tags=["review"])


async def reviewer(request: Request) -> None:
    """Let the request through with the login cookie or the key header.

    Else ask to log in. Under custom auth, the Auth handler lets the caller in (or answers 401
    itself).
    """
    request.state.by_header = False  # what lets the caller in: a header, or what a page can
    if authority(request).auth is not None:
        await current_user(request)
        request.state.by_header = bool(request.headers.get("authorization"))
        return
    key = service(request).api_key
    if key is None:
        return
    given = request.headers.get("x-api-key") or ""
    if hmac.compare_digest(given.encode(), key.encode()):
        request.state.by_header = True
        return
    if signed_cookie.claims_of(request, signed_cookie.secret_for(key)) is not None:
        return
    if request.method == "GET":
        target = quote(request.url.path, safe="/")
        raise HTTPException(status_code=303, headers={"Location": f"/review/login?next={target}"})
    raise HTTPException(status_code=401, detail="log in at /review/login first")


Reviewer = [Depends(reviewer)]


async def grant_for(request: Request, action: str, value: dict[str, Any]) -> Grant | None:
    """What the custom auth's `threads` handlers let the caller do.

    None without custom auth (the API key, or an open service, shows the reviewer every thread).
    """
    if authority(request).auth is None:
        return None
    return await decide(request, await current_user(request), "threads", action, value)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resume: Any


@router.get("/review/login", response_class=HTMLResponse)
def login_page(next: str = "/review") -> HTMLResponse:
    return HTMLResponse(
        view.page(
            "log in",
            f"""<h1>Review: log in</h1>
<form method="post" action="/review/login">
<input type="hidden" name="next" value="{view.e(_local(next))}">
<p><label>API key
<input type="password" name="api_key" autocomplete="current-password" autofocus></label>
<button type="submit">Log in</button></p></form>""",
        )
    )


@router.post("/review/login")
async def login(request: Request, svc: Svc) -> Response:
    form = parse_qs((await request.body()).decode(errors="replace"))
    given = (form.get("api_key") or [""])[0]
    target = _local((form.get("next") or ["/review"])[0])
    if svc.api_key is not None and not hmac.compare_digest(given.encode(), svc.api_key.encode()):
        return HTMLResponse(
            view.page(
                "log in",
                '<h1>Review: log in</h1><p id="status">That key is '
                'not right.</p><p><a href="/review/login">Try again</a></p>',
            ),
            status_code=401,
        )
    response = RedirectResponse(target, status_code=303)
    if svc.api_key is not None:
        token = signed_cookie.sign({"sub": "reviewer"}, signed_cookie.secret_for(svc.api_key))
        signed_cookie.set_cookie(response, token, secure=request.url.scheme == "https")
    return response


@router.post("/review/logout")
def logout() -> Response:
    response = RedirectResponse("/review/login", status_code=303)
    signed_cookie.clear_cookie(response)
    return response


def _local(target: str) -> str:
    """Only a path on this site: a login never redirects elsewhere."""
    return target if target.startswith("/") and not target.startswith("//") else "/review"


@router.get("/review/assets/mermaid.min.js", dependencies=Reviewer)
def mermaid_js() -> Response:
    return Response(mermaid_library(), media_type="text/javascript")


@router.get("/review/assets/review.js", dependencies=Reviewer)
def review_js() -> Response:
    script = (files("graphwright") / "assets" / "review.js").read_text(encoding="utf-8")
    return Response(script, media_type="text/javascript")


@router.get("/review", response_class=HTMLResponse, dependencies=Reviewer)
async def waiting(request: Request, orch: Orch) -> HTMLResponse:
    grant = await grant_for(request, "search", {"metadata": {}})
    rows = await offload(_waiting_rows, orch, grant)
    table = (
        f"<table><tr><th>thread</th><th>graph</th></tr>{rows}</table>"
        if rows
        else "<p>No thread is waiting at a gate.</p>"
    )
    return HTMLResponse(view.page("waiting", f"<h1>Threads waiting for a decision</h1>{table}"))


def _waiting_rows(orch: Orchestrator, grant: Grant | None) -> str:
    shown = [
        t
        for t in orch.threads()
        if t.status == "interrupted"
        and (grant is None or grant.allows(orch.meta(t.thread_id).get("metadata")))
    ]
    return "".join(
        f"<tr><td>{view.thread_link(t.thread_id)}</td><td>{view.e(t.graph or '')}</td></tr>"
        for t in shown
    )


@router.get("/review/{thread_id}", response_class=HTMLResponse, dependencies=Reviewer)
async def thread_page(thread_id: str, request: Request, orch: Orch) -> HTMLResponse:
    grant = await grant_for(request, "read", {"thread_id": thread_id})
    if grant is not None:
        await offload(visible_thread, orch, grant, thread_id)
    token, session = browsers.review_csrf(request, request.app.state.review_secret)
    response = HTMLResponse(await offload(_thread_html, orch, thread_id, token))
    if session is not None:
        browsers.set_session(request, response, session)
    return response


def _thread_html(orch: Orchestrator, thread_id: str, csrf: str) -> str:
    state = orch.state(thread_id)
    snapshot = orch.snapshot(thread_id)
    graph = state.graph or ""
    values = snapshot.values if isinstance(snapshot.values, dict) else {}
    calls = state.pending.calls if state.pending else []
    other = [
        (i.id, i.value)
        for t in snapshot.tasks
        for i in t.interrupts
        if not (isinstance(i.value, dict) and i.value.get("kind") == "approval")
        and not is_hitl_request(i.value)
    ]
    answer = answer_of(snapshot.values) if not snapshot.next else None
    e = view.e
    messages = view.conversation(list(values.get("messages") or []))
    pending = view.pending_form(thread_id, graph, calls) if calls else ""
    body = f"""<h1>Thread {e(thread_id)}</h1>
<p>graph <b>{e(graph)}</b> · status <b id="thread-status">{e(state.status)}</b></p>
<p id="status" role="status"></p><div id="csrf" data-token="{e(csrf)}" hidden></div>
{f'<div id="answer"><h2>Answer</h2>{view.clipped(answer)}</div>' if answer else ""}
<h2>Conversation</h2><div id="conversation">{messages}</div>
{f"<h2>Pending calls ({len(calls)})</h2>{pending}" if calls else ""}
{f"<h2>Waiting for an answer</h2>{view.generic_form(thread_id, other)}" if other else ""}
<h2>Path</h2><pre class="mermaid">{e(orch.draw(graph, "mermaid", thread_id))}</pre>
<h3>Steps</h3>{view.steps(orch.history(thread_id))}
<h2>Trace</h2>{view.trace(orch.trace(thread_id))}"""
    return view.page(thread_id, body, scripts=True)


@router.post("/review/{thread_id}/answer", dependencies=Reviewer)
async def answer(thread_id: str, body: Answer, svc: Svc, request: Request) -> dict[str, Any]:
    """Resume the thread with the page's answer, recorded as a run like any other.

    From a browser, only with the CSRF token of the page its session was given.
    """
    browsers.check_csrf(request, request.app.state.review_secret, by_header=request.state.by_header)
    grant = await grant_for(request, "create_run", {"thread_id": thread_id, "metadata": {}})
    if grant is not None:
        await offload(visible_thread, svc.orch, grant, thread_id)
    graph = (await offload(svc.orch.meta, thread_id)).get("graph")
    if not graph:
        raise HTTPException(status_code=404, detail=f"no thread {thread_id!r}")
    run_body = RunCreate(assistant_id=graph, command=CommandBody(resume=body.resume))
    if grant is not None:
        await offload(admit_run, svc.orch, grant, thread_id, run_body)  # its owner, as via the API
    launch = Launcher(svc)
    run = await offload(launch.start, thread_id, run_body, background=False)
    await launch.finished(run)
    done = await offload(svc.store.raw, thread_id, run.run_id)
    if done.get("status") == "error":
        raise HTTPException(status_code=422, detail=done.get("error") or "the answer was refused")
    return {"run_id": run.run_id, "status": done.get("status")}
