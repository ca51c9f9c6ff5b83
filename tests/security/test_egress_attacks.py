"""Attacks on the egress proxy itself (SECURITY.md 15, 16, 19, 20): each must be refused.

The tests speak to the proxy's unix socket directly, as the forwarder inside the sandbox
does. The "internet" is a server on 127.0.0.2 that a test resolver names and that the test
treats as public; 127.0.0.1 stays the user's private loopback. Each server records what
reached it, so a check that goes missing shows up as a request that got through.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from codeloop.sandbox.egress import EgressProxy
from codeloop.sandbox.egress_rules import forbidden_address

pytestmark = pytest.mark.security

PUBLIC = "127.0.0.2"  # "public" for these tests only


@dataclass
class Server:
    """A TCP server that records every connection's bytes and answers one HTTP response."""

    host: str
    port: int = 0
    received: list[bytes] = field(default_factory=list)

    def seen(self) -> bytes:
        return b"".join(self.received)


@pytest.fixture
def servers() -> Iterator[dict[str, Server]]:
    made: dict[str, Server] = {}
    listeners = []
    for name, host in (("public", PUBLIC), ("private", "127.0.0.1")):
        listener = socket.create_server((host, 0))
        server = Server(host, listener.getsockname()[1])
        made[name] = server
        listeners.append(listener)
        threading.Thread(target=_serve, args=(listener, server), daemon=True).start()
    yield made
    for listener in listeners:
        listener.close()


def _serve(listener: socket.socket, server: Server) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_answer, args=(conn, server), daemon=True).start()


def _answer(conn: socket.socket, server: Server) -> None:
    conn.settimeout(0.3)  # whatever else a client sends comes at once
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data and not data.startswith(b"\x16"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nreached")
    except OSError:
        pass
    finally:
        server.received.append(data)
        conn.close()


@pytest.fixture
def proxy(tmp_path: Path, servers: dict[str, Server]) -> Iterator[EgressProxy]:
    port = servers["public"].port
    names = {"allowed.test": [PUBLIC], "private.test": ["10.0.0.7"],
             "metadata.test": ["169.254.169.254"], "v6metadata.test": ["fd00:ec2::254"],
             "mixed.test": [PUBLIC, "127.0.0.1"], "loopback.test": ["127.0.0.1"]}
    calls: dict[str, int] = {}

    def resolver(host: str, _port: int) -> list[str]:
        calls[host] = calls.get(host, 0) + 1
        if host == "rebind.test":  # public when checked, the user's loopback afterwards
            return [PUBLIC] if calls[host] == 1 else ["127.0.0.1"]
        if host == "localhost":
            return sorted({i[4][0] for i in socket.getaddrinfo("localhost", None)})
        return names.get(host, [])

    allow = [f"{n}:{port}" for n in ("allowed.test", "private.test", "metadata.test",
                                     "v6metadata.test", "mixed.test", "loopback.test",
                                     "rebind.test", "localhost")]
    allow.append(f"localhost:{servers['private'].port}")
    with EgressProxy(allow, tmp_path / "egress.sock", resolver=resolver,
                     is_forbidden=lambda ip: ip != PUBLIC and forbidden_address(ip)) as p:
        yield p


def _send(proxy: EgressProxy, data: bytes, then: bytes = b"") -> bytes:
    """Send `data` to the proxy (and `then` after its first answer); all it answers."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(proxy.socket_path))
        sock.sendall(data)
        out = b""
        try:
            first = sock.recv(65536)
            out += first
            if then and first:
                sock.sendall(then)
            while chunk := sock.recv(65536):
                out += chunk
        except OSError:
            pass
        return out


def _refused(answer: bytes) -> bool:
    return answer.startswith(b"HTTP/1.1 403") and b"codeloop egress proxy" in answer


def test_a_reachable_allowed_host_works(proxy: EgressProxy, servers: dict[str, Server]) -> None:
    """The control case: the set-up lets an allowed request through."""
    port = servers["public"].port
    answer = _send(proxy, f"GET http://allowed.test:{port}/ok HTTP/1.1\r\n"
                   f"Host: allowed.test:{port}\r\n\r\n".encode())
    assert answer.endswith(b"reached"), answer
    assert servers["public"].seen().startswith(b"GET /ok HTTP/1.1\r\n")


def test_connect_to_a_host_not_allowed(proxy: EgressProxy, servers: dict[str, Server]) -> None:
    port = servers["public"].port
    # evil.test would resolve to the public server: only the allow-list stops it.
    proxy._resolver = lambda host, _p: [PUBLIC]  # type: ignore[method-assign]
    answer = _send(proxy, f"CONNECT evil.test:{port} HTTP/1.1\r\n\r\n".encode(), b"data")
    assert _refused(answer) and b"not on the allow-list" in answer
    assert servers["public"].received == []


def test_allowed_name_on_another_port(proxy: EgressProxy, servers: dict[str, Server]) -> None:
    answer = _send(proxy, b"CONNECT allowed.test:22 HTTP/1.1\r\n\r\n")
    assert _refused(answer) and b"on port 22" in answer


@pytest.mark.parametrize("target", [PUBLIC, "[::ffff:127.0.0.2]", "2130706434", "0x7f000002",
                                    "127.2"])
def test_ip_literals_and_numeric_names(proxy: EgressProxy, servers: dict[str, Server],
                                       target: str) -> None:
    port = servers["public"].port
    proxy._resolver = lambda host, _p: [PUBLIC]  # type: ignore[method-assign]
    proxy.allow.add(f"*.test:{port}")
    for request in (f"CONNECT {target}:{port} HTTP/1.1\r\n\r\n",
                    f"GET http://{target}:{port}/ HTTP/1.1\r\n\r\n"):
        assert _refused(_send(proxy, request.encode(), b"data")), request
    assert servers["public"].received == []
    # Refused as an address, whatever the allow-list holds.
    assert all("IP literal" in r.reason or "numeric" in r.reason for r in proxy.records)


@pytest.mark.parametrize("name", ["private.test", "metadata.test", "v6metadata.test",
                                  "mixed.test", "loopback.test", "localhost"])
def test_names_resolving_to_private_addresses(proxy: EgressProxy, servers: dict[str, Server],
                                              name: str) -> None:
    port = servers["public"].port
    answer = _send(proxy, f"CONNECT {name}:{port} HTTP/1.1\r\n\r\n".encode(), b"data")
    assert _refused(answer) and b"private or special address" in answer
    assert servers["public"].received == []


def test_localhost_never_reaches_the_users_loopback(proxy: EgressProxy,
                                                    servers: dict[str, Server]) -> None:
    """Even listed with its exact port, a name that resolves to loopback is refused."""
    port = servers["private"].port
    answer = _send(proxy, f"GET http://localhost:{port}/secret HTTP/1.1\r\n"
                   f"Host: localhost:{port}\r\n\r\n".encode())
    assert _refused(answer)
    assert servers["private"].received == []


def test_dns_rebinding_connects_only_to_the_checked_address(
        proxy: EgressProxy, servers: dict[str, Server]) -> None:
    port = servers["public"].port
    answer = _send(proxy, f"GET http://rebind.test:{port}/a HTTP/1.1\r\n"
                   f"Host: rebind.test:{port}\r\n\r\n".encode())
    assert answer.endswith(b"reached"), answer
    assert servers["private"].received == []


@pytest.mark.parametrize("later", [False, True])
def test_a_second_request_cannot_ride_on_an_allowed_connection(
        proxy: EgressProxy, servers: dict[str, Server], later: bool) -> None:
    """Pipelined with the first, or sent once the first is answered (keep-alive)."""
    port = servers["public"].port
    first = f"GET http://allowed.test:{port}/one HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n"
    second = "GET http://evil.test/two HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    if later:
        _send(proxy, first.encode(), second.encode())
    else:
        _send(proxy, (first + second).encode())
    seen = servers["public"].seen()
    assert b"/one" in seen and b"/two" not in seen and b"evil.test" not in seen
    assert b"Connection: close" in seen


@pytest.mark.parametrize("request_text", [
    # a body that hides a second request from a proxy reading only Content-Length
    "POST http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n"
    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /two HTTP/1.1\r\n\r\n",
    "GET http://allowed.test:{port}@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n",
    "GET https://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n",
    "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n"
    "Host: evil.test\r\n\r\n",
    "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n"
    " evil: folded\r\n\r\n",
])
def test_absolute_uri_smuggling(proxy: EgressProxy, servers: dict[str, Server],
                                request_text: str) -> None:
    port = servers["public"].port
    proxy._resolver = lambda host, _p: [PUBLIC]  # type: ignore[method-assign]
    answer = _send(proxy, request_text.format(port=port).encode())
    assert _refused(answer), answer
    assert servers["public"].received == []


@pytest.mark.parametrize("method", ["GET", "CONNECT"])
def test_host_header_naming_another_host(proxy: EgressProxy, servers: dict[str, Server],
                                         method: str) -> None:
    port = servers["public"].port
    target = f"allowed.test:{port}" if method == "CONNECT" else f"http://allowed.test:{port}/"
    answer = _send(proxy, f"{method} {target} HTTP/1.1\r\nHost: evil.test\r\n\r\n".encode(),
                   b"data")
    assert _refused(answer) and b"Host header" in answer
    assert servers["public"].received == []


def _client_hello(name: str) -> bytes:
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_tls_naming_another_server_than_connect(proxy: EgressProxy,
                                                servers: dict[str, Server]) -> None:
    port = servers["public"].port
    answer = _send(proxy, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n".encode(),
                   _client_hello("evil.test"))
    assert answer.startswith(b"HTTP/1.1 200")
    assert servers["public"].seen() == b""  # the tunnel was closed before any byte went on
    assert any(not r.allowed and "TLS names 'evil.test'" in r.reason for r in proxy.records)


def test_tls_naming_the_connect_host_goes_through(proxy: EgressProxy,
                                                  servers: dict[str, Server]) -> None:
    port = servers["public"].port
    hello = _client_hello("allowed.test")
    _send(proxy, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n".encode(), hello)
    assert servers["public"].seen() == hello


def test_a_flood_of_idle_connections_is_capped(proxy: EgressProxy) -> None:
    """Each connection is a host thread: a command cannot open them without limit."""
    held = []
    try:
        for _ in range(128):
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(str(proxy.socket_path))
            held.append(sock)
        deadline = time.monotonic() + 10
        with socket.socket(socket.AF_UNIX) as extra:
            extra.settimeout(10)
            while True:  # the listen queue may be full until the proxy has accepted them all
                try:
                    extra.connect(str(proxy.socket_path))
                    break
                except BlockingIOError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            answer = extra.recv(1024)
        assert answer.startswith(b"HTTP/1.1 503"), answer
    finally:
        for sock in held:
            sock.close()
