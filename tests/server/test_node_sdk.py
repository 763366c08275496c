"""The JS SDK in Node against graphwright serve: tokens of a streamed reply, a joined stream
that survives a dropped connection, and a gate answered (tests/support/node/client.mjs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphwright.testing.fixed_openai import CHUNKS, WORDS, serving
from graphwright.testing.redis_servers import Server
from graphwright.testing.until import scaled
from tests.support.paths import ROOT, SUPPORT
from tests.support.protocol_graphs import CHAT_URL_ENV
from tests.support.protocol_servers import graphwright_server

# Slow: the reference's JS SDK in a Node process
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def node_sdk() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js is not installed")
    done = subprocess.run(
        [str(ROOT / "scripts" / "node-sdk")],
        capture_output=True,
        text=True,
        timeout=scaled(600),
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"the JS SDK could not be installed: {done.stderr[-300:]}")
    return Path(done.stdout.strip())


@pytest.fixture
def service_url(redis_server: Server) -> Iterator[str]:
    with serving() as chat:
        os.environ[CHAT_URL_ENV] = chat
        with graphwright_server(redis_server.url) as svc:
            yield svc.url


def test_the_js_sdk_streams_tokens_survives_a_drop_and_answers_a_gate(
    node_sdk: Path, service_url: str
) -> None:
    script = (SUPPORT / "node" / "client.mjs").read_text()
    done = subprocess.run(
        ["node", "--input-type=module", "-", service_url],
        input=script,
        cwd=node_sdk,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["tokens"] == WORDS and len(seen["tokens"]) == CHUNKS
    assert seen["joinedTokens"] == WORDS  # every token once across the drop
    assert len(seen["joinedIds"]) == len(set(seen["joinedIds"])) and None not in seen["joinedIds"]
    assert seen["interrupt"][0]["value"] == {"question": "go on?"}
    assert seen["steps"] == ["first", "answer:yes", "last"] and seen["threadStatus"] == "idle"
