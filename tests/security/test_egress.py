"""The optional egress proxy: allow-list, IP literals, private ranges, logging, bypass (case 20).

Tests may contact no outside address, so an allowed name is resolved by a test resolver to
a loopback server started here, and only that one loopback address is treated as public.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.egress import EgressProxy, forbidden_address
from codeloop.sandbox.probe import Capabilities

from .conftest import SYSTEM_PYTHON, Box

pytestmark = pytest.mark.security


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the package index"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def index_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxied(box: Box, tmp_path: Path, caps: Capabilities,
            index_server: int) -> Iterator[tuple[Box, EgressProxy]]:
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"CANNOT EXERCISE: the egress forwarder needs {SYSTEM_PYTHON}")
    names = {"pkgs.test": ["127.0.0.1"], "private.test": ["10.0.0.7"]}
    proxy = EgressProxy(
        [f"pkgs.test:{index_server}", "private.test", "localhost"],
        tmp_path / "egress.sock",
        resolver=lambda host, _port: names.get(host, ["127.0.0.1"]),
        is_forbidden=lambda ip: ip != "127.0.0.1" and forbidden_address(ip),
    )
    with proxy:
        box.sandbox = BwrapSandbox(box.workspace, capabilities=caps, egress=proxy)
        yield box, proxy


def test_allowed_domain_goes_through_and_is_logged(
    proxied: tuple[Box, EgressProxy], index_server: int
) -> None:
    box, proxy = proxied
    result = box.run(f"curl -sS -m 10 http://pkgs.test:{index_server}/simple/")
    assert "hello from the package index" in result.output, result.output
    assert [(r.host, r.allowed) for r in proxy.records] == [("pkgs.test", True)]


def test_unlisted_domain_ip_literal_and_private_range_are_refused(
    proxied: tuple[Box, EgressProxy], index_server: int
) -> None:
    box, proxy = proxied
    result = box.run(
        f"curl -sS -m 10 http://evil.test:{index_server}/;"
        f" curl -sS -m 10 http://127.0.0.1:{index_server}/;"
        f" curl -sS -m 10 -p https://private.test:443/; echo"
    )
    assert "hello" not in result.output
    reasons = {r.host: r.reason for r in proxy.records}
    assert not any(r.allowed for r in proxy.records)
    assert "allow-list" in reasons["evil.test"]
    assert "IP literal" in reasons["127.0.0.1"]
    assert "private" in reasons["private.test"]


def test_case20_proxy_bypass_fails(proxied: tuple[Box, EgressProxy], index_server: int) -> None:
    box, proxy = proxied
    no_proxy = box.run(f"curl -sS -m 5 --noproxy '*' http://pkgs.test:{index_server}/")
    unset = box.run(f"HTTP_PROXY= http_proxy= curl -sS -m 5 http://127.0.0.1:{index_server}/")
    socat_like = box.run(
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {index_server}), 3)\""
    )
    for result in (no_proxy, unset, socat_like):
        assert "hello" not in result.output
        assert result.exit_code != 0
    assert proxy.records == []  # none of these even reached the proxy


def test_forbidden_address_ranges() -> None:
    for ip in (
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fd00:ec2::254",
        "fe80::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ):
        assert forbidden_address(ip), ip
    assert not forbidden_address("151.101.0.223")
