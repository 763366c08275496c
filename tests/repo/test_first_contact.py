"""First contact: graphwright installed from its wheel, without extras, in a clean venv, serving
and invoking LangGraph projects written the way LangGraph's docs write them (a plain graph; a
project with its own tools.py, nodes.py, state.py, graphs.py and checkpoints.py; a factory, an
async graph, the memory template's store namespace, a node longer than the client's read
timeout; LangGraph's custom auth in langgraph.json). Each goes through `serve` (runs in the
API's process, and handed to a worker with `--queue`), the Python API and the CLI, and is
compared with `langgraph dev` where the reference has the same call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright.testing.redis_servers import Server
from graphwright.testing.service import free_port
from graphwright.testing.until import scaled, until
from tests.support.langgraph_dev import langgraph_dev
from tests.support.paths import ROOT, SUPPORT

# Slow: the wheel built and installed in a venv of its own; serve, workers and the reference started
# from it
pytestmark = pytest.mark.slow

PROJECTS = SUPPORT / "first_contact"
MODES = ["inline", "queue"]


@pytest.fixture(scope="session")
def wheel_venv() -> Path:
    """The venv `scripts/wheel-venv` built from this tree's wheel (no extras)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "wheel-venv")],
        capture_output=True,
        text=True,
        timeout=scaled(600),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1])


def _env(redis_url: str, **extra: str) -> dict[str, str]:
    """A user's environment: no PYTHONPATH into this repository, no API key, our Redis."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "GRAPHWRIGHT_", "OPENAI_", "VIRTUAL_ENV"))
    }
    return {
        **env,
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": f"fc{uuid.uuid4().hex[:8]}",
        **extra,
    }


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=scaled(15))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def served(
    venv: Path, project: Path, redis_url: str, mode: str, tmp_path: Path, **env: str
) -> Iterator[str]:
    """`graphwright serve` from the wheel's venv in the project's folder; with `queue`
    mode, `--queue` and one `graphwright worker` beside it. Yields the base URL."""
    port = free_port()
    child_env = _env(redis_url, **env)
    config = ["--config", str(project / "langgraph.json")]
    log = (tmp_path / f"serve-{mode}.log").open("wb")
    procs = [
        subprocess.Popen(
            [
                str(venv / "bin" / "graphwright"),
                *config,
                "serve",
                "--port",
                str(port),
                *(["--queue"] if mode == "queue" else []),
            ],
            cwd=project,
            env=child_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ]
    if mode == "queue":
        procs.append(
            subprocess.Popen(
                [str(venv / "bin" / "graphwright"), *config, "worker"],
                cwd=project,
                env=child_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        for proc in procs:
            assert proc.poll() is None, (tmp_path / f"serve-{mode}.log").read_text()[-3000:]
        try:
            return httpx.get(f"{url}/ok", timeout=scaled(1)).status_code == 200
        except httpx.TransportError:
            return False

    try:
        until(ready, "graphwright serve from the wheel to answer /ok", 60, interval_s=0.1)
        yield url
    finally:
        for proc in procs:
            _stop(proc)
        log.close()


def _python(venv: Path, project: Path, redis_url: str, code: str) -> Any:
    """Run `code` with the wheel's interpreter in the project's folder; its last line of
    output is JSON."""
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", textwrap.dedent(code)],
        cwd=project,
        env=_env(redis_url),
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_wheel_adds_only_graphwright_at_the_top_level(wheel_venv: Path) -> None:
    site = next((wheel_venv / "lib").glob("python3*/site-packages"))
    record = next(site.glob("graphwright-*.dist-info")) / "RECORD"
    tops = {line.split(",")[0].split("/")[0] for line in record.read_text().splitlines()}
    tops = {t for t in tops if not t.endswith(".dist-info") and t != ".." and t}
    assert tops == {"graphwright", "graphwright_errors"}
    assert (site / "graphwright" / "py.typed").exists()


def test_the_wheel_venv_has_no_dev_extra(wheel_venv: Path) -> None:
    """What the suite proves here, it proves without LangChain, pytest or the CLI's dev tools."""
    for module in ("langchain", "pytest", "langgraph_api"):
        done = subprocess.run(
            [str(wheel_venv / "bin" / "python"), "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0, f"{module} is importable in the wheel's venv"


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_project_is_served_like_the_reference(
    wheel_venv: Path, redis_server: Server, tmp_path: Path, mode: str
) -> None:
    project = PROJECTS / "plain"
    expected = {"topic": "owls", "steps": ["researched owls", "written"]}
    with served(wheel_venv, project, redis_server.url, mode, tmp_path) as url:
        sdk = get_sync_client(url=url, api_key=None, timeout=_timeout())
        thread = sdk.threads.create()["thread_id"]
        assert sdk.runs.wait(thread, "agent", input={"topic": "owls"}) == expected
        background = sdk.runs.create(  # kept: a stateless run's thread may go before the join
            None, "agent", input={"topic": "owls"}, on_completion="keep"
        )  # a background run
        assert sdk.runs.join(background["thread_id"], background["run_id"]) == expected
    with langgraph_dev(_copy(project, tmp_path / "ref")) as ref:
        sdk = get_sync_client(url=ref, api_key=None, timeout=_timeout())
        thread = sdk.threads.create()["thread_id"]
        assert sdk.runs.wait(thread, "agent", input={"topic": "owls"}) == expected


@pytest.mark.parametrize("mode", MODES)
def test_a_project_with_its_own_tools_nodes_and_state_modules(
    wheel_venv: Path, redis_server: Server, tmp_path: Path, mode: str
) -> None:
    project = PROJECTS / "everyday"
    with served(wheel_venv, project, redis_server.url, mode, tmp_path) as url:
        sdk = get_sync_client(url=url, api_key=None, timeout=_timeout())
        assert sdk.runs.wait(None, "agent", input={"text": "hi"}) == {
            "text": "hi",
            "steps": ["hello HI!"],
        }
        assert sdk.runs.wait(None, "async_agent", input={"text": "hi"})["steps"] == ["async HI!"]
        made = sdk.runs.wait(
            None, "factory", input={"text": "hi"}, config={"configurable": {"tone": "warm"}}
        )
        assert made["steps"] == ["warm hi"]


@pytest.mark.parametrize("mode", MODES)
def test_the_memory_templates_store_namespace_is_the_users(
    wheel_venv: Path, redis_server: Server, tmp_path: Path, mode: str
) -> None:
    project = PROJECTS / "everyday"
    with served(wheel_venv, project, redis_server.url, mode, tmp_path) as url:
        sdk = get_sync_client(url=url, api_key=None, timeout=_timeout())
        sdk.store.put_item(["memories", "li"], "from-client", {"text": "likes tea"})
        done = sdk.runs.wait(None, "memory", input={"text": "likes owls", "user": "li"})
        assert sorted(done["remembered"]) == ["likes owls", "likes tea"]
        found = sdk.store.search_items(["memories", "li"])["items"]
        assert sorted(i["value"]["text"] for i in found) == ["likes owls", "likes tea"]


@pytest.mark.parametrize("mode", MODES)
def test_a_node_longer_than_the_clients_read_timeout(
    wheel_venv: Path, redis_server: Server, tmp_path: Path, mode: str
) -> None:
    """The reference keeps a waiting response alive; a 15 s node under a 10 s read timeout."""
    project = PROJECTS / "everyday"
    with served(
        wheel_venv, project, redis_server.url, mode, tmp_path, FIRST_CONTACT_NAP_S="15"
    ) as url:
        sdk = get_sync_client(url=url, api_key=None, timeout=httpx.Timeout(10, connect=scaled(5)))
        assert sdk.runs.wait(None, "slow", input={"text": "zz"})["steps"] == ["woke"]


@pytest.mark.parametrize("mode", MODES)
def test_auth_in_langgraph_json_is_enforced_like_the_reference(
    wheel_venv: Path, redis_server: Server, tmp_path: Path, mode: str
) -> None:
    project = PROJECTS / "guarded"
    calls = {
        "none": {},
        "bad": {"Authorization": "Bearer nope"},
        "alice": {"Authorization": "Bearer token-alice"},
    }

    def statuses(url: str) -> dict[str, int]:
        return {
            who: httpx.post(
                f"{url}/threads/search", json={}, headers=headers, timeout=scaled(10)
            ).status_code
            for who, headers in calls.items()
        }

    with served(wheel_venv, project, redis_server.url, mode, tmp_path) as url:
        ours = statuses(url)
        sdk = get_sync_client(
            url=url, api_key=None, headers={"Authorization": "Bearer token-alice"}
        )
        assert sdk.runs.wait(None, "agent", input={"topic": "owls"})["steps"][-1] == "written"
    with langgraph_dev(_copy(project, tmp_path / "ref")) as ref:
        theirs = statuses(ref)
    assert ours == theirs == {"none": 401, "bad": 401, "alice": 200}


@pytest.mark.parametrize("graph", ["agent", "factory", "async_agent", "memory"])
def test_the_python_api_invokes_each_graph(
    wheel_venv: Path, redis_server: Server, graph: str
) -> None:
    project = PROJECTS / "everyday"
    values = _python(
        wheel_venv,
        project,
        redis_server.url,
        f"""
        import json
        from graphwright import Orchestrator
        orch = Orchestrator.from_config("langgraph.json")
        result = orch.invoke({graph!r}, {{"text": "hi", "user": "li"}})
        state = orch.state(result.thread_id)
        print(json.dumps({{"status": result.status, "values": state.values}}))
    """,
    )
    assert values["status"] == "completed", values
    assert values["values"].get("steps") or values["values"].get("remembered")


def test_the_cli_runs_a_plain_project(wheel_venv: Path, redis_server: Server) -> None:
    project = PROJECTS / "plain"
    done = subprocess.run(
        [
            str(wheel_venv / "bin" / "graphwright"),
            "run",
            "agent",
            "--input",
            json.dumps({"topic": "owls"}),
            "--json",
        ],
        cwd=project,
        env=_env(redis_server.url),
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert '"completed"' in done.stdout


def _timeout() -> httpx.Timeout:
    """A failing call fails in a minute, not the SDK's five."""
    return httpx.Timeout(scaled(60), connect=scaled(5))


def _copy(project: Path, to: Path) -> Path:
    """The reference writes into the folder it serves; it gets a copy."""
    to.mkdir(parents=True, exist_ok=True)
    for item in project.iterdir():
        if item.is_file():
            (to / item.name).write_bytes(item.read_bytes())
    return to
