"""Connections to MCP servers: one per configured server per process, restarted when it dies.

The MCP SDK is asyncio; graphwright's executor is threaded. Every connection lives on
the process's run loop (`graphwright.tools.runloop`), and callers block on its futures. A
stdio server is started on first use and again on the next call after it died; a
streamable-HTTP connection is re-established the same way.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import tempfile
import threading
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import IO, Any, TypeVar

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from graphwright.tools.mcp_config import HttpServer, ServerConfig, StdioServer
from graphwright.tools.runloop import hand, run_loop
from graphwright_errors import ConfigurationError

T = TypeVar("T")
# A connection that broke under a call, whichever layer noticed.
TRANSPORT_ERRORS = (
    OSError,
    EOFError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    httpx2.TransportError,
)


class ServerStartError(ConfigurationError):
    """A configured MCP server did not start or did not answer the handshake."""


class ConnectionLost(Exception):
    """The server went away (its process died, or the HTTP connection broke) during a call."""


class _Loop:
    """The event loop every MCP connection of the process runs on (the run loop)."""

    def __init__(self) -> None:
        self.loop = run_loop()  # the process's run loop: MCP sessions live beside the runs

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise


_LOOP: _Loop | None = None
_LOOP_LOCK = threading.Lock()


def event_loop() -> _Loop:
    """The process's one loop for MCP connections, started on first use."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = _Loop()
        return _LOOP


class McpConnection:
    """One configured server. `call` and `list_tools` connect first when needed."""

    def __init__(self, name: str, config: ServerConfig) -> None:
        self.name = name
        self.config = config
        self.starts = 0  # how many times the server was started (or connected)
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._errlog: IO[str] | None = None

    def describe(self) -> str:
        return f"MCP server {self.name!r} ({self.config.describe()})"

    # --- called from any thread ---

    def list_tools(self) -> list[mcp_types.Tool]:
        return event_loop().run(self._list_tools(), self.config.startup_timeout_s + 30)

    def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        meta: dict[str, Any] | None,
        timeout_s: float,
        check_first: bool = False,
    ) -> mcp_types.CallToolResult:
        """Call `tool`; raises ConnectionLost, ServerStartError or MCPError.

        With `check_first` (writes), a round trip proves the connection alive before the
        call is sent, so a server that died while idle is restarted instead of failing a
        write whose outcome would then be unknown.
        """
        budget = 2 * self.config.startup_timeout_s + timeout_s + 5
        return event_loop().run(self._call(tool, arguments, meta, timeout_s, check_first), budget)

    async def acall(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        meta: dict[str, Any] | None,
        timeout_s: float,
        check_first: bool = False,
    ) -> mcp_types.CallToolResult:
        """`call` for a coroutine on the run loop: awaited there, no thread held."""
        budget = 2 * self.config.startup_timeout_s + timeout_s + 5
        return await hand(
            asyncio.wait_for(self._call(tool, arguments, meta, timeout_s, check_first), budget)
        )

    def close(self) -> None:
        event_loop().run(self._disconnect(), 10)

    # --- on the loop ---

    async def _list_tools(self) -> list[mcp_types.Tool]:
        client = await self._connected()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await client.session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None,
        timeout_s: float,
        check_first: bool,
    ) -> mcp_types.CallToolResult:
        client = await self._connected()
        if check_first:
            try:  # ping is gone from the 2026 protocol; listing tools is as cheap
                await client.session.list_tools()
            except (MCPError, *TRANSPORT_ERRORS):
                await self._drop(client)
                client = await self._connected()
        try:
            return await client.call_tool(
                tool,
                arguments,
                read_timeout_seconds=timeout_s,
                meta=meta,  # type: ignore[arg-type]  # a plain _meta dict
            )
        except MCPError as exc:
            if exc.error.code == mcp_types.CONNECTION_CLOSED:
                await self._drop(client)
                raise ConnectionLost(f"{self.describe()} closed the connection") from exc
            raise
        except TRANSPORT_ERRORS as exc:  # a transport error the SDK let through
            await self._drop(client)
            raise ConnectionLost(f"{self.describe()}: {type(exc).__name__}: {exc}") from exc

    async def _drop(self, client: Client) -> None:
        """Forget a broken connection, unless another call already replaced it."""
        assert self._lock is not None  # set by _connected, which gave us `client`
        async with self._lock:
            if self._client is client:
                await self._disconnect()

    async def _connected(self) -> Client:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is not None and (self._task is None or not self._task.done()):
                return self._client
            await self._disconnect()
            return await self._connect()

    async def _connect(self) -> Client:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._hold(ready, self._stop))
        self.starts += 1
        try:
            self._client = await asyncio.wait_for(
                asyncio.shield(ready), self.config.startup_timeout_s
            )
        except TimeoutError as exc:
            await self._disconnect()
            raise ServerStartError(
                f"{self.describe()} did not answer the MCP handshake within "
                f"{self.config.startup_timeout_s}s{self._stderr_tail()}"
            ) from exc
        except Exception as exc:
            await self._disconnect()
            verb = "did not start" if isinstance(self.config, StdioServer) else "is unreachable"
            raise ServerStartError(
                f"{self.describe()} {verb}: {_reason(exc)}{self._stderr_tail()}"
            ) from exc
        return self._client

    async def _hold(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Own the SDK's context managers in one task, as anyio requires, until told to stop."""
        try:
            async with Client(self._transport()) as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def _transport(self) -> Any:
        config = self.config
        if isinstance(config, StdioServer):
            if self._errlog is not None:
                self._errlog.close()
            # Kept open for the life of the server; read back when it fails to start.
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            return stdio_client(params, errlog=self._errlog)
        assert isinstance(config, HttpServer)
        return _http_transport(config)

    async def _disconnect(self) -> None:
        self._client = None
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            task, self._task = self._task, None
            try:
                await asyncio.wait_for(task, 10)
            except (TimeoutError, Exception):
                task.cancel()

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        self._errlog.seek(0)
        lines = [line for line in self._errlog.read().splitlines() if line.strip()]
        return f"; its stderr ends: {' | '.join(lines[-3:])[-400:]}" if lines else ""


@asynccontextmanager
async def _http_transport(config: HttpServer) -> AsyncIterator[Any]:
    """Streamable HTTP with the configured headers; the HTTP client closes with it."""
    async with (
        create_mcp_http_client(headers=config.headers or None) as http,
        streamable_http_client(config.url, http_client=http) as streams,
    ):
        yield streams


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions)
    if isinstance(exc, MCPError) and exc.error.code == mcp_types.CONNECTION_CLOSED:
        return "it closed the connection during the handshake"
    return f"{type(exc).__name__}: {exc}"


_CONNECTIONS: dict[tuple[str, str], McpConnection] = {}
_CONNECTIONS_LOCK = threading.Lock()


def connection(name: str, config: ServerConfig) -> McpConnection:
    """The process's connection to this server.

    One per name and transport (command or URL), whatever the allowlist and limits.
    """
    transport = config.model_dump_json(include={"command", "args", "env", "cwd", "url", "headers"})
    key = (name, transport)
    with _CONNECTIONS_LOCK:
        if key not in _CONNECTIONS:
            _CONNECTIONS[key] = McpConnection(name, config)
        return _CONNECTIONS[key]


@atexit.register
def close_all() -> None:
    """Stop every server this process started."""
    with _CONNECTIONS_LOCK:
        conns = list(_CONNECTIONS.values())
        _CONNECTIONS.clear()
    for conn in conns:
        try:
            conn.close()
        except Exception:  # exiting anyway; a server that will not stop is killed with us
            continue
