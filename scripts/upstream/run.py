"""Run LangGraph's own test suite against graphwright's Redis savers.

    python scripts/upstream/run.py [--all-savers] [pytest args...]

Fetches the `langgraph` sdist matching the installed version (`pip download
--no-binary :all: --no-deps`) into `.cache/upstream/` (git-ignored, kept between
runs), copies its `tests/`, adds `RedisSaver` and `AsyncRedisSaver` to its
`sync_checkpointer`/`async_checkpointer` fixtures, writes a copy of its prune tests
(`test_prune_postgres.py`) with the Redis savers in place of PostgresSaver, starts a
Redis server and runs the test files that use those fixtures. By default only the Redis
parametrizations run (the upstream savers' own ones take minutes and test LangGraph,
not graphwright); `--all-savers` runs InMemorySaver and SqliteSaver beside them.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "upstream"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from graphwright.testing.redis_servers import start_server  # noqa: E402 (after the path insert)

FIXTURES = ("sync_checkpointer", "async_checkpointer")
# Fail with every saver, InMemorySaver and SqliteSaver included: these tests of the
# langgraph sdist pin the exact metadata of streamed messages, and the installed
# langchain-core adds keys to it (`ls_integration`). A version skew between the two
# packages, not a saver difference, so they are left out for all savers alike.
VERSION_SKEW = (
    "tests/test_large_cases.py::test_prebuilt_tool_chat",
    "tests/test_large_cases.py::test_weather_subgraph",
    "tests/test_large_cases_async.py::test_prebuilt_tool_chat",
    "tests/test_large_cases_async.py::test_weather_subgraph",
    "tests/test_pregel.py::test_tags_stream_mode_messages",
    "tests/test_pregel_async.py::test_tags_stream_mode_messages",
)
# They hook PostgresSaver's SQL statements to race a turn against prune: Postgres only.
POSTGRES_ONLY = (
    "test_keep_latest_keeps_a_turn_saved_after_it_read_the_heads",
    "test_keep_latest_refuses_a_thread_that_switches_to_a_delta_channel_mid_batch",
    "test_keep_latest_keeps_a_delta_channel_turn_saved_after_the_thread_check",
)


def fetch(version: str) -> Path:
    """The sdist's tests folder, downloaded and unpacked once per version."""
    unpacked = CACHE / f"langgraph-{version}"
    if (unpacked / "tests" / "conftest.py").exists():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-binary",
            ":all:",
            "--no-deps",
            f"langgraph=={version}",
            "-d",
            str(CACHE),
        ],
        check=True,
    )
    sdist = CACHE / f"langgraph-{version}.tar.gz"
    with tarfile.open(sdist) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.name.startswith(f"langgraph-{version}/tests/") and safe_member(m)
        ]
        # Members checked above: Pythons before 3.11.4 have no extraction filter.
        tar.extractall(CACHE, members=members)
    return unpacked


def safe_member(member: tarfile.TarInfo) -> bool:
    """A plain file or folder that stays inside the folder it is unpacked into."""
    parts = Path(member.name).parts
    return (
        (member.isfile() or member.isdir())
        and not Path(member.name).is_absolute()
        and ".." not in parts
    )


def prepare(unpacked: Path, version: str) -> Path:
    """A fresh, patched copy of the tests to run in."""
    work = CACHE / f"run-{version}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(unpacked / "tests", work / "tests")
    conftest = work / "tests" / "conftest.py"
    conftest.write_text(conftest.read_text() + (HERE / "conftest_overlay.py.in").read_text())
    prune = (work / "tests" / "test_prune_postgres.py").read_text()
    prune = re.sub(r"SYNC = \[.*?\]", "SYNC = [_checkpointer_redis]", prune, flags=re.S)
    prune = re.sub(r"ASYNC = \[.*?\]", "ASYNC = [_checkpointer_redis_aio]", prune, flags=re.S)
    prune = prune.replace('    pytest.mark.skipif(NO_DOCKER, reason="needs Postgres"),\n', "")
    prune = prune.replace(
        "from tests.conftest import NO_DOCKER",
        "from tests.conftest import _checkpointer_redis, _checkpointer_redis_aio",
    )
    assert "_checkpointer_redis]" in prune and "skipif(NO_DOCKER" not in prune, "prune patch"
    (work / "tests" / "test_prune_graphwright.py").write_text(prune)
    (work / "tests" / "test_prune_postgres.py").unlink()
    (work / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    return work


def test_files(work: Path) -> list[str]:
    files = sorted(
        p.name
        for p in (work / "tests").glob("test_*.py")
        if any(f in p.read_text() for f in FIXTURES)
    )
    return [f"tests/{name}" for name in [*files, "test_prune_graphwright.py"]]


def main(argv: list[str]) -> int:
    all_savers = "--all-savers" in argv
    extra = [a for a in argv if a != "--all-savers"]
    version = importlib.metadata.version("langgraph")
    work = prepare(fetch(version), version)
    server = start_server(CACHE / "redis")
    env = {
        **os.environ,
        "NO_DOCKER": "true",
        "GW_UPSTREAM_REDIS_URL": server.url,
        "GW_UPSTREAM_ONLY_REDIS": "0" if all_savers else "1",
        "PYTHONPATH": str(work),
    }
    deselect = [f"--deselect=tests/test_prune_graphwright.py::{t}" for t in POSTGRES_ONLY]
    deselect += [f"--deselect={t}" for t in VERSION_SKEW]
    workers = os.environ.get("GRAPHWRIGHT_TEST_WORKERS", "3")  # each saver has its own prefix
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:asyncio",
        "-n",
        workers,
        *test_files(work),
        *deselect,
        *extra,
    ]
    print(f"LangGraph {version}'s tests against the Redis savers ({work})", flush=True)
    try:
        code = subprocess.run(cmd, cwd=work, env=env).returncode
        if code == 1:
            # A few upstream tests order tasks by sleeps of 10 ms (test_imp_nested): on a
            # loaded machine a write can take longer. Failures get one more try, alone.
            print("rerunning the failed tests once, alone", flush=True)
            code = subprocess.run([*cmd, "-n", "0", "--last-failed"], cwd=work, env=env).returncode
        return code
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
