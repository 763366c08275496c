"""Runs longer than the client's read timeout, through the real `langgraph-sdk`: every route
that waits (`runs.wait` on a thread and stateless, `runs.join`) writes a keep-alive
newline while the run is pending, as the Agent Server does, and the JSON after it still
parses; a client that goes away cancels the run only when it asked (`on_disconnect`)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client

from graphwright import Orchestrator
from graphwright.settings import Settings
from graphwright.testing.kit import until
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from tests.support.differential import reference_server
from tests.support.paths import SUPPORT

# Slow: runs outliving a client's read timeout on purpose: seconds each
pytestmark = pytest.mark.slow

KEEPALIVE_S = 0.5  # the service's interval here (the reference's 5 s, scaled down)
READ_TIMEOUT_S = 2.0  # the client's, well above the interval and well below the run
NAP_S = 5.0  # how long the node sleeps


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_RUN_RATE=0,
        GRAPHWRIGHT_GRAPHS="tests.support.sleepy_graphs:register",
        GRAPHWRIGHT_KEEPALIVE_S=scaled(KEEPALIVE_S),
    )
    orch = Orchestrator(settings=settings)
    try:
        with running(orch) as svc:
            yield svc
    finally:
        orch.close()


def short_read() -> tuple[float, float, float, float]:
    """(connect, read, write, pool): the client gives up on a body quiet for READ_TIMEOUT_S."""
    return scaled(10), scaled(READ_TIMEOUT_S), scaled(10), scaled(10)


def test_waits_longer_than_the_clients_read_timeout_complete_through_the_sdk(
    service: Service,
) -> None:
    """A thread's wait, a stateless wait and a join of a background run, at once: each run
    sleeps past the client's read timeout, and each answer is the run's values, read on the
    first connection (the SDK reconnects to `Location` on a cut-off body: it must not)."""
    nap = {"seconds": scaled(NAP_S)}

    async def scenario() -> list[object]:
        sdk = get_client(url=service.url, api_key=None, timeout=short_read())
        mine, theirs = (
            (await sdk.threads.create())["thread_id"],
            (await sdk.threads.create())["thread_id"],
        )
        background = await sdk.runs.create(theirs, "nap", input=nap)
        return list(
            await asyncio.gather(
                sdk.runs.wait(mine, "nap", input=nap),
                sdk.runs.wait(None, "nap", input=nap),
                sdk.runs.join(theirs, background["run_id"]),
            )
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.monotonic()
        answers = asyncio.run(scenario())
    assert time.monotonic() - started >= nap["seconds"]  # each outlived the read timeout
    assert answers == [{**nap, "woke": True}] * 3
    assert not [w for w in caught if "reconnect" in str(w.message)]


def test_a_wait_writes_newlines_while_pending_then_json(service: Service) -> None:
    """The bytes: `\\n` every interval while the run is pending, then the values; the
    headers name the run and where to join it, as the reference's."""
    chunks: list[bytes] = []
    nap = {"seconds": scaled(2)}
    with (
        httpx.Client(base_url=service.url, timeout=short_read()) as http,
        http.stream("POST", "/runs/wait", json={"assistant_id": "nap", "input": nap}) as answer,
    ):
        assert answer.status_code == 200
        chunks.extend(answer.iter_raw())
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["location"] == answer.headers["content-location"] + "/join"
    body = b"".join(chunks)
    newlines = len(body) - len(body.lstrip(b"\n"))
    assert newlines >= 2 and set(b"".join(chunks[:-1])) <= set(b"\n")
    assert json.loads(body) == {**nap, "woke": True}


def first_newline(answer: httpx.Response) -> None:
    """Read the keep-alive that says the run is pending, and go away."""
    assert answer.status_code == 200
    assert next(answer.iter_raw()) == b"\n"


def run_of(answer: httpx.Response) -> tuple[str, str]:
    _, _, thread_id, _, run_id = answer.headers["content-location"].split("/")
    return thread_id, run_id


@pytest.mark.parametrize("on_disconnect", ["cancel", "continue", None])
def test_a_wait_cancels_its_run_on_disconnect_only_when_asked(
    service: Service, on_disconnect: str | None
) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    thread_id = sdk.threads.create()["thread_id"]
    seconds = scaled(30 if on_disconnect == "cancel" else 2)
    body = {"assistant_id": "nap", "input": {"seconds": seconds}, "on_disconnect": on_disconnect}
    with (
        httpx.Client(base_url=service.url, timeout=short_read()) as http,
        http.stream("POST", f"/threads/{thread_id}/runs/wait", json=body) as answer,
    ):
        first_newline(answer)
        run_id = run_of(answer)[1]
    wanted = "interrupted" if on_disconnect == "cancel" else "success"
    until(
        lambda: sdk.runs.get(thread_id, run_id)["status"] == wanted,
        f"the run {wanted}",
        timeout_s=15,
    )
    values = sdk.threads.get_state(thread_id)["values"]
    assert isinstance(values, dict)
    assert values.get("woke") is (None if on_disconnect == "cancel" else True)


def test_a_client_gone_before_the_first_keepalive_cancels_when_it_asked(service: Service) -> None:
    """The request is sent and the socket closed at once: the status line was never sent."""
    sdk = get_sync_client(url=service.url, api_key=None)
    thread_id = sdk.threads.create()["thread_id"]
    body = json.dumps(
        {"assistant_id": "nap", "input": {"seconds": scaled(30)}, "on_disconnect": "cancel"}
    ).encode()
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(
            f"POST /threads/{thread_id}/runs/wait HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        until(lambda: sdk.runs.list(thread_id), "the run created")
    until(
        lambda: sdk.runs.list(thread_id)[0]["status"] == "interrupted",
        "the run interrupted",
        timeout_s=15,
    )


def test_a_join_with_cancel_on_disconnect_cancels_the_run(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    thread_id = sdk.threads.create()["thread_id"]
    run_id = sdk.runs.create(thread_id, "nap", input={"seconds": scaled(30)})["run_id"]
    with (
        httpx.Client(base_url=service.url, timeout=short_read()) as http,
        http.stream(
            "GET",
            f"/threads/{thread_id}/runs/{run_id}/join",
            params={"cancel_on_disconnect": "true"},
        ) as answer,
    ):
        first_newline(answer)
    until(
        lambda: sdk.runs.get(thread_id, run_id)["status"] == "interrupted",
        "the joined run interrupted",
        timeout_s=15,
    )


def timed_wait(url: str, nap_s: float) -> tuple[httpx.Headers, list[tuple[float, bytes]]]:
    """A stateless wait's headers and its body's chunks, each with when it came."""
    chunks: list[tuple[float, bytes]] = []
    started = time.monotonic()
    with (
        httpx.Client(base_url=url, timeout=scaled(30)) as http,
        http.stream(
            "POST", "/runs/wait", json={"assistant_id": "nap", "input": {"seconds": nap_s}}
        ) as answer,
    ):
        assert answer.status_code == 200, answer.read()
        chunks.extend((time.monotonic() - started, c) for c in answer.iter_raw())
    return answer.headers, chunks


def test_a_wait_answers_with_the_references_bytes_at_its_interval(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    """Default settings on both: a newline at 5 s while the 6 s run is pending, then the same
    JSON, the same content type and a Location to join."""
    nap_s = 6.0
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_RUN_RATE=0,
        GRAPHWRIGHT_GRAPHS="tests.support.sleepy_graphs:register",
    )
    orch = Orchestrator(settings=settings)
    try:
        with (
            running(orch) as ours,
            reference_server(
                {"nap": str(SUPPORT / "sleepy_graphs.py") + ":graph"}, tmp_path / "reference"
            ) as reference,
        ):
            answers = [timed_wait(url, nap_s) for url in (reference, ours.url)]
    finally:
        orch.close()
    bodies = []
    for headers, chunks in answers:
        assert headers["content-type"] == "application/json"
        assert headers["location"].endswith("/join") and headers["location"].startswith("/threads/")
        newlines = [at for at, chunk in chunks if chunk == b"\n"]
        assert newlines and 4.5 <= newlines[0] <= scaled(5.5) + 0.5  # the 5 s interval
        body = b"".join(chunk for _, chunk in chunks)
        assert body.startswith(b"\n")  # newlines, then the JSON
        bodies.append(json.loads(body))
    assert bodies[0] == bodies[1] == {"seconds": nap_s, "woke": True}
