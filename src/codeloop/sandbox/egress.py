"""An optional host-side egress proxy: the only way out of a sandbox, by allow-list.

It listens on a unix socket that is bound into the sandbox (where a forwarder exposes it
as 127.0.0.1:3128 and HTTP(S)_PROXY point at it). It takes `CONNECT host:port` and
absolute-form plain HTTP requests (read strictly: `egress_http`), refuses IP literals,
hosts outside the allow-list and names that resolve to private, loopback, link-local or
otherwise special addresses (`egress_rules`), connects only to the addresses it checked,
and records every decision.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeloop.sandbox.egress_forwarder import pipe
from codeloop.sandbox.egress_http import Refused, Request, parse_request
from codeloop.sandbox.egress_rules import AllowList, forbidden_address, host_problem, ip_literal
from codeloop.sandbox.egress_tls import client_hello_name

__all__ = ["EgressProxy", "EgressRecord", "forbidden_address"]

Resolver = Callable[[str, int], list[str]]
_MAX_HEAD = 16_384
_TIMEOUT_S = 15
# A plain HTTP answer that stalls this long ends the relay.
_IDLE_S = 120
_MAX_CONNECTIONS = 128
# The client's first bytes come from inside the sandbox, over loopback: no long wait.
_HELLO_WAIT_S = 3


@dataclass(frozen=True)
class EgressRecord:
    """One request the proxy saw and what it decided."""

    method: str
    host: str
    port: int
    allowed: bool
    reason: str
    at: float


def _system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def refusal_text(host: str, port: int, reason: str) -> str:
    """What the client (and so the model, and the user) reads when a request is refused."""
    where = f"{host}:{port}" if host else "the request"
    return (f"codeloop egress proxy: {where} refused: {reason}. The session reaches only the "
            "hosts in the [network] allow list of the user's config.\n")


class EgressProxy:
    """A threaded proxy on `socket_path`; `records` holds every decision, in order."""

    def __init__(
        self,
        allow: Sequence[str] | AllowList,
        socket_path: Path,
        *,
        resolver: Resolver = _system_resolver,
        is_forbidden: Callable[[str], bool] = forbidden_address,
        on_request: Callable[[EgressRecord], None] | None = None,
    ) -> None:
        self.allow = allow if isinstance(allow, AllowList) else AllowList(allow)
        self.socket_path = socket_path
        self.records: list[EgressRecord] = []
        self._taken = 0
        self._resolver = resolver
        self._is_forbidden = is_forbidden
        self._on_request = on_request
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)
        self._server: socket.socket | None = None

    def __enter__(self) -> EgressProxy:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.socket_path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(self.socket_path))
        # Commands may run as another uid (the root drop) and must be able to connect.
        self.socket_path.chmod(0o666)
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def close(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
            self._server = None
        self.socket_path.unlink(missing_ok=True)

    def take_records(self) -> list[EgressRecord]:
        """The decisions made since the last call (for the session's event log)."""
        with self._lock:
            new = self.records[self._taken:]
            self._taken = len(self.records)
        return new

    def _accept_loop(self) -> None:
        server = self._server
        while server is not None and server.fileno() != -1:
            try:
                client, _ = server.accept()
            except OSError:
                return
            # A thread per connection, but a bounded number: a sandboxed command must not
            # exhaust the host's threads.
            if not self._slots.acquire(blocking=False):
                with contextlib.suppress(OSError):
                    client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                   b"Content-Length: 0\r\n\r\n")
                client.close()
                continue
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _record(self, method: str, host: str, port: int, allowed: bool, reason: str) -> None:
        record = EgressRecord(method, host, port, allowed, reason, time.time())
        with self._lock:
            self.records.append(record)
        if self._on_request is not None:
            self._on_request(record)

    def decide(self, host: str, port: int) -> tuple[list[str], str]:
        """The addresses to connect to (empty when refused) and the reason."""
        address = ip_literal(host)
        if address is not None:
            entry = self.allow.match(address, port)
            if entry is not None:  # the user listed this exact address:port
                return [address], f"allowed by {entry.text}"
        problem = host_problem(host)
        if problem is not None:
            return [], problem
        entry = self.allow.match(host, port)
        if entry is None:
            other = f" on port {port}" if self.allow.match(host, None) else ""
            return [], f"host is not on the allow-list{other}"
        try:
            addresses = self._resolver(host, port)
        except OSError as exc:
            return [], f"cannot resolve: {exc}"
        if not addresses:
            return [], "resolves to nothing"
        # Every address is checked, and only checked ones are connected to: a name that
        # resolves (or re-resolves) to the user's own network never gets through.
        if any(self._is_forbidden(a) for a in addresses):
            return [], "resolves to a private or special address"
        return addresses, f"allowed by {entry.text}"

    def _handle(self, client: socket.socket) -> None:
        method, host, port = "?", "", 0
        try:
            request = parse_request(_read_head(client))
            method, host, port = request.method, request.host, request.port
            addresses, reason = self.decide(host, port)
            if not addresses:
                raise Refused(reason, host, port)
            upstream = _connect(addresses, port)
            with upstream:
                if method == "CONNECT":
                    self._tunnel(client, upstream, request, reason)
                else:
                    self._forward(client, upstream, request, reason)
        except Refused as refused:
            host, port = refused.host or host, refused.port or port
            self._record(method, host, port, False, refused.reason)
            _send_refusal(client, refused, refusal_text(host, port, refused.reason))
        except OSError as exc:  # only before anything was relayed: the upstream is unreachable
            with contextlib.suppress(OSError):
                text = f"codeloop egress proxy: cannot reach {host}:{port}: {exc}\n".encode()
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n"
                               b"Content-Length: %d\r\n\r\n%s" % (len(text), text))
        finally:
            client.close()
            self._slots.release()

    def _tunnel(self, client: socket.socket, upstream: socket.socket, request: Request,
                reason: str) -> None:
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        # The client's first bytes must not name another server in TLS (SNI) than the one
        # asked for: one IP (a CDN) serves many names, and the name picks the site.
        start = _read_hello(client, request.tunnel_start)
        named = client_hello_name(start)
        if named is not None and named.lower().rstrip(".") != request.host.rstrip("."):
            raise _Closed(f"TLS names {named[:80]!r}, not {request.host}", request.host,
                          request.port)
        self._record("CONNECT", request.host, request.port, True, reason)
        with contextlib.suppress(OSError):
            if start:
                upstream.sendall(start)
            pipe(client, upstream)

    def _forward(self, client: socket.socket, upstream: socket.socket, request: Request,
                 reason: str) -> None:
        self._record(request.method, request.host, request.port, True, reason)
        with contextlib.suppress(OSError):
            body = request.body
            client.settimeout(_TIMEOUT_S)
            while len(body) < request.body_length:
                chunk = client.recv(min(65536, request.body_length - len(body)))
                if not chunk:
                    break
                body += chunk
            upstream.sendall(request.upstream_head + body)
            # Only the answer flows back; anything more the client sends is not relayed.
            upstream.settimeout(_IDLE_S)
            while chunk := upstream.recv(65536):
                client.sendall(chunk)


class _Closed(Refused):
    """Refused after the tunnel was opened: the connection is only closed."""


def _send_refusal(client: socket.socket, refused: Refused, text: str) -> None:
    if isinstance(refused, _Closed):
        return
    status = b"403 Forbidden"
    body = text.encode()
    with contextlib.suppress(OSError):
        client.sendall(b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                       b"Connection: close\r\n\r\n%s" % (status, len(body), body))


def _connect(addresses: list[str], port: int) -> socket.socket:
    """A connection to the first of the checked `addresses` that answers."""
    error: OSError | None = None
    for address in addresses:
        try:
            upstream = socket.create_connection((address, port), timeout=_TIMEOUT_S)
        except OSError as exc:
            error = exc
            continue
        upstream.settimeout(None)
        return upstream
    raise error or OSError("no address to connect to")


def _read_hello(client: socket.socket, start: bytes) -> bytes:
    """The client's first TLS record (whole, when it is one), within a short wait."""
    data = start
    client.settimeout(_HELLO_WAIT_S)
    try:
        while len(data) < 5 or (data[0] == 0x16 and len(data) < 5 + int.from_bytes(data[3:5])):
            chunk = client.recv(16_384)
            if not chunk:
                break
            data += chunk
            if data[0] != 0x16:  # not TLS: nothing to check
                break
    except TimeoutError:
        pass  # a client that waits for the server first (ssh, smtp) sends nothing yet
    client.settimeout(None)
    return data


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(_TIMEOUT_S)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk or len(data) > _MAX_HEAD:
            raise Refused("incomplete request head")
        data += chunk
    sock.settimeout(None)
    return data
