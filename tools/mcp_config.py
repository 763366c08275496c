"""The `mcpServers` configuration: which MCP servers to start, and which of their tools to expose.

The shape is the common one (`command`/`args`/`env` for stdio, `url`/`headers`
for streamable HTTP) plus graphwright's guard rails: an explicit `tools` allowlist and
per-tool overrides of what the server's annotations say.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from graphwright.tools.spec import Risk, Trust
from graphwright_errors import ConfigurationError

SERVER_NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"


class ToolOverride(BaseModel):
    """What the configuration says about one tool, over the server's annotations."""

    model_config = ConfigDict(extra="forbid")

    risk: Risk | None = None
    trust: Trust | None = None
    idempotent: bool | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    max_result_chars: int | None = Field(default=None, ge=100)


class _Server(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tools: list[str] = Field(
        min_length=1,
        description="the tools to expose, by name (`status` or `git.status`), or `*` for all",
    )
    overrides: dict[str, ToolOverride] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0, description="per call, unless overridden")
    max_result_chars: int = Field(default=4_000, ge=100)
    startup_timeout_s: float = Field(default=30.0, gt=0)

    def allows(self, server: str, tool: str) -> bool:
        wanted = {t.removeprefix(f"{server}.") for t in self.tools}
        return "*" in wanted or tool in wanted

    def override(self, server: str, tool: str) -> ToolOverride:
        return self.overrides.get(tool) or self.overrides.get(f"{server}.{tool}") or ToolOverride()


class StdioServer(_Server):
    """A server graphwright starts as a child process and talks to over stdin/stdout."""

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


class HttpServer(_Server):
    """A server reached over streamable HTTP."""

    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_transport(cls, data: Any) -> Any:
        kind = data.get("type") or data.get("transport") if isinstance(data, dict) else None
        if kind not in (None, "http", "streamable-http", "streamable_http", "streamableHttp"):
            raise ValueError(f"transport {kind!r} is not supported; use stdio or streamable HTTP")
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in ("type", "transport")}
        return data

    def describe(self) -> str:
        """The URL without credentials (user info, query); headers are never shown."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return f"{parts.scheme}://{netloc}{parts.path}"


ServerConfig = StdioServer | HttpServer
_servers = TypeAdapter(dict[Annotated[str, Field(pattern=SERVER_NAME)], dict[str, Any]])


def parse_mcp_servers(raw: Mapping[str, Any]) -> dict[str, ServerConfig]:
    """Validate an `mcpServers` mapping (as found in settings or `langgraph.json`).

    Raises:
        ConfigurationError: naming the server and the field that is wrong.
    """
    try:
        entries = _servers.validate_python(dict(raw))
    except ValidationError as exc:
        raise ConfigurationError(
            f"mcpServers: server names must match {SERVER_NAME} ({exc.errors()[0]['msg']})"
        ) from exc
    out: dict[str, ServerConfig] = {}
    for name, entry in entries.items():
        entry = {k: v for k, v in entry.items() if k != "type" or v != "stdio"}
        model: type[ServerConfig] = HttpServer if "url" in entry else StdioServer
        try:
            out[name] = model.model_validate(entry)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigurationError(f"mcpServers.{name}: {problems}") from exc
    return out


def load_mcp_servers(source: str) -> dict[str, ServerConfig]:
    """Parse the `GRAPHWRIGHT_MCP_SERVERS` setting: inline JSON or the path of a JSON file.

    The JSON is either `{"mcpServers": {...}}` (the file most MCP clients read) or the
    mapping itself.
    """
    text = source if source.lstrip().startswith("{") else _read(source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"GRAPHWRIGHT_MCP_SERVERS is not valid JSON: {exc.msg} at position {exc.pos}"
        ) from exc
    if not isinstance(data, dict):
        raise ConfigurationError("GRAPHWRIGHT_MCP_SERVERS must be a JSON object")
    servers = data.get("mcpServers", data)
    if not isinstance(servers, dict):
        raise ConfigurationError("mcpServers must be a JSON object of server name to server")
    return parse_mcp_servers(servers)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"GRAPHWRIGHT_MCP_SERVERS names the file {path!r}, which cannot be read ({exc})"
        ) from exc
