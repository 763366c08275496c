"""Cost of a tool call through an MCP server against a built-in tool, through the same executor.

`python -m bench.mcp [N]`: N reads of `get_current_time` (built-in) and of
`time.get_current_time` (mcp-server-time over stdio), and N writes of a FastMCP
test tool over stdio with its idempotency record, after one warm-up call each.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis

from graphwright.checkpoints.embedded import EmbeddedRedis
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import ToolCall, ToolExecutor
from graphwright.tools.mcp import tool_specs
from graphwright.tools.mcp_client import close_all
from graphwright.tools.mcp_config import parse_mcp_servers

ROOT = Path(__file__).resolve().parent.parent


def timed(
    executor: ToolExecutor, name: str, args: dict[str, object], n: int, tag: str
) -> list[float]:
    out = []
    for i in range(n + 1):
        start = time.perf_counter()
        obs = executor.execute(ToolCall(name=name, args=args, id=f"{tag}{i}"), thread_id="bench")
        assert obs.ok, obs.error
        if i:  # the first call starts the server
            out.append((time.perf_counter() - start) * 1000)
    return out


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        log = Path(home) / "effects.jsonl"
        servers = parse_mcp_servers(
            {
                "time": {
                    "command": sys.executable,
                    "args": ["-m", "mcp_server_time"],
                    "tools": ["*"],
                },
                "t": {
                    "command": sys.executable,
                    "args": ["-m", "tests.support.mcp_test_server"],
                    "env": {"MCP_TEST_LOG": str(log), "PYTHONPATH": str(ROOT)},
                    "tools": ["post_note"],
                },
            }
        )
        started = time.perf_counter()
        specs = tool_specs(servers)
        startup = (time.perf_counter() - started) * 1000
        registry = build_registry()
        for spec in specs:
            registry.add(spec)
        embedded = EmbeddedRedis(home)
        executor = ToolExecutor(registry, redis.Redis.from_url(embedded.start()))
        builtin = timed(executor, "get_current_time", {"timezone_offset": "+09:00"}, n, "b")
        mcp = timed(executor, "time.get_current_time", {"timezone": "Asia/Tokyo"}, n, "m")
        writes = timed(executor, "t.post_note", {"text": "x"}, n, "w")
        close_all()
        embedded.stop()
    base = statistics.median(builtin)
    print(f"starting 2 stdio servers and listing their tools: {startup:.0f} ms")
    for label, values in (
        ("built-in read", builtin),
        ("MCP read (stdio)", mcp),
        ("MCP write (stdio, keyed record)", writes),
    ):
        med = statistics.median(values)
        print(
            f"{label:34} median {med:7.2f} ms"
            f"  p95 {sorted(values)[int(0.95 * len(values))]:7.2f} ms"
            f"  ×{med / base:.1f} the built-in"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
