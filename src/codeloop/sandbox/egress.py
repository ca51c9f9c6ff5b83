"""An optional host-side egress proxy: the only way out of a sandbox, by domain allow-list.

It listens on a unix socket that is bound into the sandbox (where a forwarder exposes it
as 127.0.0.1:3128 and HTTP(S)_PROXY point at it). It accepts `CONNECT host:port` and
absolute-form plain HTTP requests, refuses IP literals, names outside the allow-list and
names that resolve to private, loopback, link-local or otherwise special addresses, and
logs every request.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from codeloop.sandbox.egress_forwarder import pipe

Resolver = Callable[[str, int], list[str]]
_MAX_HEAD = 16_384


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


def forbidden_address(ip: str) -> bool:
    """Loopback, private, link-local (cloud metadata), multicast, reserved or unspecified."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return not addr.is_global or addr.is_multicast


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class DomainAllowList:
    """`pypi.org` matches that name; `*.pythonhosted.org` matches its subdomains."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._exact = {p.lower().rstrip(".") for p in patterns if not p.startswith("*.")}
        self._suffix = {p[1:].lower().rstrip(".") for p in patterns if p.startswith("*.")}

    def allows(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return name in self._exact or any(name.endswith(s) for s in self._suffix)


class EgressProxy:
    """A threaded proxy on `socket_path`; `records` holds every decision, in order."""

    def __init__(
        self,
        allow: Sequence[str],
        socket_path: Path,
        *,
        resolver: Resolver = _system_resolver,
        is_forbidden: Callable[[str], bool] = forbidden_address,
        on_request: Callable[[EgressRecord], None] | None = None,
    ) -> None:
        self.allow = DomainAllowList(allow)
        self.socket_path = socket_path
        self.records: list[EgressRecord] = []
        self._resolver = resolver
        self._is_forbidden = is_forbidden
        self._on_request = on_request
        self._lock = threading.Lock()
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

    def _accept_loop(self) -> None:
        server = self._server
        while server is not None and server.fileno() != -1:
            try:
                client, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _record(self, method: str, host: str, port: int, allowed: bool, reason: str) -> None:
        record = EgressRecord(method, host, port, allowed, reason, time.time())
        with self._lock:
            self.records.append(record)
        if self._on_request is not None:
            self._on_request(record)

    def decide(self, host: str, port: int) -> tuple[list[str], str]:
        """The addresses to connect to (empty when refused) and the reason."""
        if not host or _is_ip_literal(host):
            return [], "IP literals are refused; name the host"
        if not self.allow.allows(host):
            return [], "host is not on the allow-list"
        try:
            addresses = self._resolver(host, port)
        except OSError as exc:
            return [], f"cannot resolve: {exc}"
        if not addresses:
            return [], "resolves to nothing"
        if any(self._is_forbidden(a) for a in addresses):
            return [], "resolves to a private or special address"
        return addresses, "allowed"

    def _handle(self, client: socket.socket) -> None:
        try:
            head = _read_head(client)
            method, target, after_head = _parse_request(head)
            if method == "CONNECT":
                host, _, port_text = target.rpartition(":")
                port = int(port_text) if port_text.isdigit() else 443
            else:
                url = urlsplit(target)
                host, port = url.hostname or "", url.port or 80
            addresses, reason = self.decide(host.strip("[]"), port)
            self._record(method, host, port, bool(addresses), reason)
            if not addresses:
                body = reason.encode()
                client.sendall(
                    b"HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                return
            upstream = socket.create_connection((addresses[0], port), timeout=15)
            upstream.settimeout(None)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if after_head:
                    upstream.sendall(after_head)
            else:
                upstream.sendall(head)
            pipe(client, upstream)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n" + str(exc).encode()[:200])
        finally:
            client.close()


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(15)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk or len(data) > _MAX_HEAD:
            raise ValueError("incomplete request head")
        data += chunk
    sock.settimeout(None)
    return data


def _parse_request(data: bytes) -> tuple[str, str, bytes]:
    """Method, target, and the bytes after the head (which belong to the tunnel or body)."""
    head, _, rest = data.partition(b"\r\n\r\n")
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split()
    if len(parts) != 3:
        raise ValueError(f"bad request line {line!r}")
    return parts[0].upper(), parts[1], rest
