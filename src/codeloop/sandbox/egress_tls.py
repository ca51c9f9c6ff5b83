"""The server name a TLS ClientHello asks for (SNI), read without decrypting anything.

Through a CONNECT tunnel the proxy sees the name the client asked for in CONNECT and then,
in clear text, the name its TLS handshake names. They must be the same (SECURITY.md 20).
"""

from __future__ import annotations

_HANDSHAKE = 0x16
_CLIENT_HELLO = 0x01
_SERVER_NAME = 0x0000


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise IndexError("short")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def number(self, n: int) -> int:
        return int.from_bytes(self.take(n))

    def block(self, length_bytes: int) -> _Reader:
        return _Reader(self.take(self.number(length_bytes)))


def client_hello_name(data: bytes) -> str | None:
    """The host name in the ClientHello starting `data`; None when `data` is not one or it
    names none. A ClientHello cut short or malformed reads as naming "?" (never trusted)."""
    if len(data) < 6 or data[0] != _HANDSHAKE or data[5] != _CLIENT_HELLO:
        return None
    try:
        record = _Reader(data[5:5 + int.from_bytes(data[3:5])])
        record.take(1)
        hello = record.block(3)
        hello.take(2 + 32)  # version, random
        hello.block(1)  # session id
        hello.block(2)  # cipher suites
        hello.block(1)  # compression methods
        if hello.at == len(hello.data):
            return None  # no extensions
        extensions = hello.block(2)
        while extensions.at < len(extensions.data):
            kind = extensions.number(2)
            body = extensions.block(2)
            if kind != _SERVER_NAME:
                continue
            names = body.block(2)
            while names.at < len(names.data):
                name_type = names.number(1)
                name = names.block(2).data
                if name_type == 0:
                    return name.decode("ascii", "replace")
    except IndexError:
        return "?"
    return None
