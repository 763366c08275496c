"""Fuzz the HTTP API with schemathesis against its own `/openapi.json`.

    python -m bench.fuzz [--max-examples 60] [--phases examples,coverage,fuzzing,stateful]
                         [--auth]

Starts its own redis-server and the service (offline model, an API key, a real worker)
in this process, then runs the `schemathesis` CLI on every operation with the checks
that matter here: no 5xx and responses that match their schema. `--auth` serves it
under a custom `langgraph_sdk.Auth` (`bench/fuzz_auth.py`: owners stamped and
filtered) instead of the key. Prints the numbers the CLI reports (operations, generated
test cases, failures) and exits non-zero on a failure. The test suite runs a small
version (tests/server/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import fuzz_auth
from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.testing.redis_servers import start_server
from graphwright.testing.service import running

KEY = "fuzz-key-0b6e1d"
CHECKS = "not_a_server_error,response_schema_conformance"


@dataclass
class FuzzResult:
    returncode: int
    output: str
    requests: int = 0  # HTTP requests it sent (every entry of its HAR report)

    @property
    def failed(self) -> bool:
        """A check failed (a 5xx or a response off its schema), or schemathesis itself broke.

        Schemathesis breaking is a `Runtime Error`: it generated nothing for those operations. A
        request that timed out (a `runs.wait` on a run delayed by `after_seconds`) is an error, not
        a failure.
        """
        return any(sign in self.output for sign in ("Failures:", "unique failure", "Runtime Error"))

    def report(self) -> str:
        """The output without its warnings (long lists of operations): phases, failures, summary."""
        head, sep, rest = self.output.partition("WARNINGS ===")
        if not sep:
            return self.output
        return head + "(warnings left out)\n" + rest[rest.find("=== SUMMARY") :]

    def number(self, pattern: str) -> int:
        found = re.search(pattern, self.output)
        return int(found.group(1)) if found else 0


def fuzz(
    url: str, *, max_examples: int, phases: str, seed: int = 1, header: str = f"x-api-key: {KEY}"
) -> FuzzResult:
    """Run the schemathesis CLI against the service at `url`; returns what it printed."""
    exe = Path(sys.executable).with_name("schemathesis")
    command = [
        str(exe),
        "run",
        f"{url}/openapi.json",
        "-H",
        header,
        "--checks",
        CHECKS,
        "--phases",
        phases,
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--workers",
        "1",
        "--request-timeout",
        "10",
        "--suppress-health-check",
        "all",
        "--no-color",
        "--continue-on-failure",
        "--generation-database",
        "none",
    ]  # no examples carried over: a seed is a seed
    # Run in a scratch folder: schemathesis may still write a cache in its cwd.
    with tempfile.TemporaryDirectory() as scratch:
        har = Path(scratch) / "requests.har"
        command += ["--report", "har", "--report-har-path", str(har)]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=scratch,
            env={"PATH": "/usr/bin:/bin", "SCHEMATHESIS_TELEMETRY": "false", "HOME": scratch},
        )
        sent = len(json.loads(har.read_text())["log"]["entries"]) if har.is_file() else 0
    return FuzzResult(done.returncode, done.stdout + done.stderr, sent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=60)
    parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful")
    parser.add_argument(
        "--auth", action="store_true", help="serve under bench/fuzz_auth.py's Auth, not the API key"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "redis")
        try:
            settings = Settings(
                _env_file=None,
                REDIS_URL=server.url,  # type: ignore[call-arg]
                GRAPHWRIGHT_KEY_PREFIX="fuzz",
                GRAPHWRIGHT_RUN_RATE=0,
            )
            orch = Orchestrator(settings=settings, model=OfflineChatModel())
            serving = (
                running(orch, auth=fuzz_auth.auth) if args.auth else running(orch, api_key=KEY)
            )
            header = (
                f"Authorization: Bearer {fuzz_auth.TOKEN}" if args.auth else f"x-api-key: {KEY}"
            )
            with serving as svc:
                result = fuzz(
                    svc.url, max_examples=args.max_examples, phases=args.phases, header=header
                )
        finally:
            server.stop()
    print(result.report())
    print(f"requests sent: {result.requests}")
    return 1 if result.failed or not result.number(r"(\d+) generated") else 0


if __name__ == "__main__":
    raise SystemExit(main())
