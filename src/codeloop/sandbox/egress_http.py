"""Reading one proxy request strictly: what a sandboxed client may ask the egress proxy.

Only `CONNECT host:port` and plain-HTTP requests in absolute form are taken. The proxy and
the server behind it must agree on where a request goes, so anything two parsers could read
differently is refused rather than guessed: a Host header naming another host, several Host
or Content-Length headers, chunked request bodies, folded headers, user info in the URL.
A plain request goes upstream rewritten (origin form, `Connection: close`, no proxy headers)
with exactly its body, so no second request can ride on the same connection unchecked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_AUTHORITY = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:/@\[\]\s]+)(?::([0-9]{1,5}))?$")
# Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: never passed on.
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
        "proxy-authenticate", "te", "trailer", "upgrade", "transfer-encoding"}


class Refused(ValueError):
    """A request the proxy will not relay; the message says why."""

    def __init__(self, reason: str, host: str = "", port: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.host = host
        self.port = port


@dataclass
class Request:
    """A parsed request: where it goes and, for plain HTTP, what to send there."""

    method: str
    host: str
    port: int
    # Plain HTTP: the rewritten head, and the body bytes already read (up to body_length).
    upstream_head: bytes = b""
    body: bytes = b""
    body_length: int = 0
    # CONNECT: bytes the client sent after the head (the start of its TLS handshake).
    tunnel_start: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    match = _AUTHORITY.match(text)
    if not match:
        raise Refused(f"cannot read the host in {text[:80]!r}")
    host = match.group(1).removeprefix("[").removesuffix("]").lower()
    if match.group(2) is None:
        if default_port is None:
            raise Refused("CONNECT needs host:port")
        return host, default_port
    port = int(match.group(2))
    if not 0 < port < 65536:
        raise Refused(f"port {port} is out of range", host)
    return host, port


def _headers(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        if line[:1] in (" ", "\t"):
            raise Refused("folded header lines are refused")
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.match(name):
            raise Refused(f"malformed header line {line[:80]!r}")
        out.append((name.lower(), value.strip()))
    return out


def _one(headers: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if k == name]
    if len(values) > 1:
        raise Refused(f"more than one {name} header")
    return values[0] if values else None


def _check_host_header(headers: list[tuple[str, str]], host: str, port: int,
                       default_port: int) -> None:
    given = _one(headers, "host")
    if given is None:
        return
    try:
        named, named_port = _authority(given, default_port)
    except Refused:
        raise Refused("the Host header cannot be read", host, port) from None
    if named.rstrip(".") != host.rstrip(".") or named_port != port:
        raise Refused(f"the Host header names {given[:80]!r}, not the requested "
                      f"{host}:{port} (a request for one host cannot be sent to another)",
                      host, port)


def parse_request(data: bytes) -> Request:
    """The request in `data` (its head and whatever followed); `Refused` says what is wrong."""
    head, _, rest = data.partition(b"\r\n\r\n")
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise Refused("the request head is not ASCII") from None
    line, *header_lines = text.split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1") or not _TOKEN.match(parts[0]):
        raise Refused(f"bad request line {line[:80]!r}")
    method, target, _version = parts
    headers = _headers(header_lines)
    if method == "CONNECT":
        host, port = _authority(target, None)
        _check_host_header(headers, host, port, port)
        return Request(method, host, port, tunnel_start=rest, headers=headers)
    return _plain(method, target, headers, rest)


def _plain(method: str, target: str, headers: list[tuple[str, str]], rest: bytes) -> Request:
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.netloc:
        raise Refused("the proxy takes absolute http:// URLs, and CONNECT for https")
    if "@" in url.netloc:
        raise Refused("user info in the URL is refused")
    host, port = _authority(url.netloc, 80)
    _check_host_header(headers, host, port, 80)
    if _one(headers, "transfer-encoding") is not None:
        raise Refused("chunked (Transfer-Encoding) request bodies are refused", host, port)
    length_text = _one(headers, "content-length")
    if length_text is not None and not length_text.isdigit():
        raise Refused("a malformed Content-Length", host, port)
    length = int(length_text or 0)
    named = {token.strip().lower() for k, v in headers if k == "connection"
             for token in v.split(",")}
    kept = [(k, v) for k, v in headers if k not in _HOP and k not in named and k != "host"]
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    authority = host if port == 80 else f"{host}:{port}"
    if ":" in host:
        authority = f"[{host}]" if port == 80 else f"[{host}]:{port}"
    lines = [f"{method} {path} HTTP/1.1", f"Host: {authority}",
             *(f"{k}: {v}" for k, v in kept), "Connection: close"]
    upstream = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    return Request(method, host, port, upstream_head=upstream, body=rest[:length],
                   body_length=length, headers=headers)
