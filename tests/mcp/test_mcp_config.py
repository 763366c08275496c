"""MCP configuration, annotation mapping and argument models: pure parts, plus start failures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mcp_types
import pytest
from pydantic import ValidationError

from graphwright.tools.executor import describe_validation
from graphwright.tools.mcp import classify, tool_specs
from graphwright.tools.mcp_client import ServerStartError
from graphwright.tools.mcp_config import (
    HttpServer,
    StdioServer,
    load_mcp_servers,
    parse_mcp_servers,
)
from graphwright.tools.mcp_schema import args_model
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolSpec
from graphwright_errors import ConfigurationError

# autouse: the servers a test starts stop after it
from tests.support.mcp_rig import stop_mcp_servers  # noqa: F401


def test_stdio_and_http_entries_in_the_common_shape() -> None:
    servers = parse_mcp_servers(
        {
            "git": {
                "command": "uvx",
                "args": ["mcp-server-git"],
                "env": {"A": "1"},
                "tools": ["*"],
            },
            "web": {
                "type": "streamable-http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer x"},
                "tools": ["web.fetch"],
            },
        }
    )
    assert (
        isinstance(servers["git"], StdioServer)
        and servers["git"].describe() == "uvx mcp-server-git"
    )
    web = servers["web"]
    assert isinstance(web, HttpServer) and web.describe() == "http://127.0.0.1:9/mcp"
    secret = HttpServer(url="https://user:pw@mcp.example/mcp?token=abc", tools=["*"])
    assert secret.describe() == "https://mcp.example/mcp"
    assert web.allows("web", "fetch") and not web.allows("web", "delete")
    assert servers["git"].allows("git", "anything")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"git": {"command": "uvx"}}, "mcpServers.git: tools: Field required"),
        (
            {"git": {"command": "uvx", "tools": []}},
            "mcpServers.git: tools: List should have at least 1",
        ),
        (
            {"git": {"command": "uvx", "tools": ["*"], "overrides": {"x": {"risk": "maybe"}}}},
            "mcpServers.git: overrides.x.risk",
        ),
        ({"web": {"url": "ftp://x", "tools": ["*"]}}, "mcpServers.web: url"),
        (
            {"web": {"type": "sse", "url": "http://x", "tools": ["*"]}},
            "transport 'sse' is not supported",
        ),
        ({"bad name": {"command": "x", "tools": ["*"]}}, "server names must match"),
    ],
)
def test_bad_configuration_names_the_server_and_field(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match="mcpServers") as caught:
        parse_mcp_servers(raw)
    assert message in str(caught.value)


def test_setting_is_inline_json_or_a_file_with_an_mcpservers_key(tmp_path: Path) -> None:
    entry = {"command": "x", "tools": ["*"]}
    assert list(load_mcp_servers(json.dumps({"t": entry}))) == ["t"]
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"t": entry}}))
    assert list(load_mcp_servers(str(path))) == ["t"]
    with pytest.raises(ConfigurationError, match="cannot be read"):
        load_mcp_servers(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        load_mcp_servers("{nope")


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        (None, ("write", "untrusted", False)),
        ({}, ("write", "untrusted", False)),
        ({"readOnlyHint": True}, ("read", "untrusted", False)),
        ({"readOnlyHint": True, "openWorldHint": False}, ("read", "trusted", False)),
        (
            {"readOnlyHint": False, "openWorldHint": False, "idempotentHint": True},
            ("write", "trusted", True),
        ),
        ({"readOnlyHint": True, "idempotentHint": True}, ("read", "untrusted", False)),
        ({"destructiveHint": False, "openWorldHint": True}, ("write", "untrusted", False)),
    ],
)
def test_annotations_map_to_risk_trust_and_idempotence(
    hints: dict[str, bool] | None, expected: tuple[str, str, bool]
) -> None:
    annotations = None if hints is None else mcp_types.ToolAnnotations.model_validate(hints)
    assert classify(annotations) == expected


def test_argument_model_follows_the_json_schema_and_names_the_field() -> None:
    schema = {
        "type": "object",
        "required": ["repo_path"],
        "additionalProperties": False,
        "properties": {
            "repo_path": {"type": "string"},
            "max_count": {"type": "integer"},
            "mode": {"enum": ["short", "full"]},
            "ratio": {"type": "number"},
        },
    }
    model = args_model("git.git_log", schema)
    assert model.model_validate({"repo_path": "/r", "ratio": 1}).to_call() == {
        "repo_path": "/r",
        "ratio": 1,
    }
    for bad, message in [
        ({}, "repo_path: Field required"),
        ({"repo_path": 5}, "repo_path: Input should be a valid string"),
        ({"repo_path": "/r", "max_count": "3"}, "max_count: Input should be a valid integer"),
        ({"repo_path": "/r", "mode": "long"}, "mode: 'long' is not one of ['short', 'full']"),
        ({"repo_path": "/r", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ]:
        with pytest.raises(ValidationError) as caught:
            model.model_validate(bad)
        assert message in describe_validation(caught.value)


def test_model_facing_names_have_no_dots_and_resolve_to_the_tool() -> None:
    spec = ToolSpec(
        name="git.git_status",
        description="d",
        func=lambda a, c: None,
        args_model=args_model("git.git_status", {"type": "object"}),
        server="git",
        json_schema={"type": "object", "properties": {}},
    )
    registry = ToolRegistry([spec])
    assert spec.model_name == "git__git_status" and spec.source == "mcp:git"
    assert registry.get("git__git_status") is spec and registry.get("git.git_status") is spec
    bound = spec.as_langchain_tool()
    assert bound.name == "git__git_status" and bound.args_schema == spec.json_schema


def test_a_server_that_does_not_start_is_one_error_naming_it_and_its_command() -> None:
    missing = parse_mcp_servers(
        {"ghost": {"command": "no-such-mcp-server", "args": ["--x"], "tools": ["*"]}}
    )
    with pytest.raises(ServerStartError) as caught:
        tool_specs(missing)
    message = str(caught.value)
    assert "MCP server 'ghost' (no-such-mcp-server --x) did not start" in message
    assert "\n" not in message
    dying = parse_mcp_servers(
        {
            "dying": {
                "command": sys.executable,
                "args": ["-c", "import sys; sys.stderr.write('bad token'); sys.exit(2)"],
                "tools": ["*"],
            }
        }
    )
    with pytest.raises(ServerStartError) as caught:
        tool_specs(dying)
    assert "MCP server 'dying'" in str(caught.value) and "bad token" in str(caught.value)


def test_configured_overrides_win_over_annotations() -> None:
    from graphwright.tools.mcp import to_spec
    from graphwright.tools.mcp_client import McpConnection

    (config,) = parse_mcp_servers(
        {
            "s": {
                "command": "unused",
                "tools": ["*"],
                "timeout_s": 5,
                "overrides": {
                    "fetch": {"trust": "untrusted", "max_result_chars": 500},
                    "s.save": {"idempotent": True, "timeout_s": 2},
                    "peek": {"risk": "read"},
                },
            }
        }
    ).values()
    conn = McpConnection("s", config)  # never started: building specs needs no server

    def spec(name: str, **hints: bool) -> ToolSpec:
        tool = mcp_types.Tool(
            name=name,
            input_schema={"type": "object"},
            annotations=mcp_types.ToolAnnotations.model_validate(hints),
        )
        return to_spec(conn, tool)

    fetch = spec("fetch", readOnlyHint=True, openWorldHint=False)
    assert (fetch.risk, fetch.trust, fetch.max_result_chars, fetch.timeout_s) == (
        "read",
        "untrusted",
        500,
        5,
    )
    save = spec("save", openWorldHint=False)
    assert (save.risk, save.keyed, save.timeout_s, save.retry_reads) == ("write", True, 2, 0)
    assert spec("peek").risk == "read" and spec("peek").retry_reads == 1
    assert spec("other", idempotentHint=True, openWorldHint=False).keyed
    assert conn.starts == 0
