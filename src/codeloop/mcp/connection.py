"""The session's MCP servers, each held open by one task on a dedicated event-loop thread:
the SDK is async and the session loop is not. Closing ends every task, and with it every
server process the SDK started (it stops their whole process group)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import tempfile
import threading
from collections.abc import Coroutine, Mapping
from contextlib import AsyncExitStack
from typing import IO, Any, TypeVar

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation, Tool

from codeloop import __version__
from codeloop.errors import CodeloopError
from codeloop.mcp.settings import McpServer

T = TypeVar("T")
# Pages of a tool list read at most: a server that pages forever cannot hang a session.
_MAX_PAGES = 50
_STDERR_TAIL = 2000
_CLOSE_TIMEOUT_S = 15.0


class McpServerError(CodeloopError):
    """An MCP server could not be started, reached, or asked."""


class McpHub:
    """Connections to the configured servers, callable from any thread."""

    def __init__(self, servers: Mapping[str, McpServer]) -> None:
        self.servers = dict(servers)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="codeloop-mcp",
                                        daemon=True)
        self._clients: dict[str, Client] = {}
        self._holders: dict[str, concurrent.futures.Future[None]] = {}
        self._stderr: dict[str, IO[str]] = {}
        self._stop: asyncio.Event | None = None
        self._started = False

    # -- life ------------------------------------------------------------------------------

    def connect(self) -> dict[str, list[Tool] | McpServerError]:
        """Start every server and read its tools; a server that fails is reported, not raised."""
        self._thread.start()
        self._started = True
        self._stop = self._run(_new_event(), 10.0)
        readies: dict[str, concurrent.futures.Future[list[Tool]]] = {}
        for name, config in self.servers.items():
            ready: concurrent.futures.Future[list[Tool]] = concurrent.futures.Future()
            readies[name] = ready
            self._holders[name] = asyncio.run_coroutine_threadsafe(
                self._hold(name, config, ready), self._loop)
        out: dict[str, list[Tool] | McpServerError] = {}
        for name, ready in readies.items():
            # The holder enforces the start-up timeout itself, so that it stops the server
            # before it ends; waiting longer here is only against a shutdown that hangs.
            timeout = self.servers[name].startup_timeout_s + _CLOSE_TIMEOUT_S
            try:
                out[name] = ready.result(timeout=timeout)
            except concurrent.futures.TimeoutError:
                self._holders[name].cancel()
                out[name] = _too_slow(name, self.servers[name])
            except McpServerError as exc:
                out[name] = exc
            except Exception as exc:
                out[name] = McpServerError(f"MCP server {name!r} failed to start: "
                                           f"{_describe(exc)}{self._stderr_tail(name)}",
                                           _hint(name, self.servers[name]))
        return out

    def close(self) -> None:
        """Stop every server and the loop thread; safe to call twice."""
        if not self._started:
            return
        self._started = False
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        for holder in self._holders.values():
            try:
                holder.result(timeout=_CLOSE_TIMEOUT_S)
            except (Exception, concurrent.futures.CancelledError):
                holder.cancel()  # failed, or stuck past the SDK's own bounded shutdown
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=_CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
        for log in self._stderr.values():
            log.close()

    # -- use -------------------------------------------------------------------------------

    def list_tools(self, server: str) -> list[Tool]:
        client = self._client(server)
        return self._run(_all_tools(client, refresh=True), self.servers[server].call_timeout_s)

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        client = self._client(server)
        timeout = self.servers[server].call_timeout_s
        return self._run(client.call_tool(tool, arguments, read_timeout_seconds=timeout),
                         timeout + 5)

    def _client(self, server: str) -> Client:
        client = self._clients.get(server)
        if client is None:
            raise McpServerError(f"MCP server {server!r} is not connected",
                                 "see the mcp_server_failed event for why")
        return client

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise McpServerError(f"no answer from the MCP server within {timeout:g} s",
                                 "raise call_timeout_s for that server") from exc

    # -- the holding task ------------------------------------------------------------------

    async def _hold(self, name: str, config: McpServer,
                    ready: concurrent.futures.Future[list[Tool]]) -> None:
        """Connect, list the tools, and keep the connection until `close`."""
        # A deadline for the start only, lifted once the tools are listed. Cancelling by this
        # scope (never by cancelling the task from outside) lets the SDK stop the server.
        scope = anyio.CancelScope(deadline=anyio.current_time() + config.startup_timeout_s)
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    client = Client(await self._transport(name, config, stack),
                                    client_info=Implementation(name="codeloop",
                                                               version=__version__),
                                    read_timeout_seconds=config.call_timeout_s)
                    await stack.enter_async_context(client)
                    tools = await _all_tools(client, refresh=False)
                    scope.deadline = math.inf
                    self._clients[name] = client
                    ready.set_result(tools)
                    assert self._stop is not None
                    await self._stop.wait()
            if scope.cancelled_caught and not ready.done():
                ready.set_exception(_too_slow(name, config))
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception)
                                    else McpServerError(f"cancelled ({type(exc).__name__})"))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._clients.pop(name, None)

    async def _transport(self, name: str, config: McpServer, stack: AsyncExitStack) -> Any:
        if config.command is not None:
            # The server's stderr is kept (never shown live) to explain a failed start.
            log = self._stderr[name] = tempfile.TemporaryFile(  # noqa: SIM115 (see close)
                "w+", encoding="utf-8", errors="replace")
            params = StdioServerParameters(command=config.command, args=config.args,
                                           env=config.env, cwd=config.cwd)
            return stdio_client(params, errlog=log)
        assert config.url is not None
        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers=config.headers, timeout=httpx2.Timeout(30.0, read=config.call_timeout_s)))
        return streamable_http_client(config.url, http_client=http)

    def _stderr_tail(self, name: str) -> str:
        log = self._stderr.get(name)
        if log is None:
            return ""
        try:
            log.seek(0)
            text = log.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f"\n  its stderr ended with:\n{text}" if text else ""


async def _new_event() -> asyncio.Event:
    return asyncio.Event()


async def _all_tools(client: Client, refresh: bool) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _describe(exc: BaseException) -> str:
    """The innermost reasons of an exception group, else the exception itself."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _too_slow(name: str, config: McpServer) -> McpServerError:
    return McpServerError(
        f"MCP server {name!r} did not list its tools within {config.startup_timeout_s:g} s",
        f"check that it starts on its own; raise mcp.servers.{name}.startup_timeout_s")


def _hint(name: str, config: McpServer) -> str:
    if config.command is not None:
        return (f"check mcp.servers.{name}.command ({config.command!r}) runs on this machine "
                "and speaks MCP on stdin/stdout")
    return f"check that {config.url} is an MCP streamable-HTTP endpoint and is running"
