"""What the egress proxy lets through: the allow-list, host names, refused addresses.

An allow-list entry is one of:
- `pypi.org`: that name, on the web ports (80, 443);
- `*.pythonhosted.org`: its subdomains (not the name itself), on the web ports;
- `name:port` or `*.name:port`: the same, on that port only;
- `address:port` (`127.0.0.1:8080`, `[::1]:8080`): that exact address and port, the only
  way to reach a private or loopback address (a local registry). A bare address is refused.
A name must always resolve to public addresses, so DNS cannot turn an allowed name into a
way to the user's own machine (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

WEB_PORTS = (80, 443)
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
# A last label of digits or hex reads as an address to some resolvers (127.1, 0x7f.1,
# 2130706433): such names are addresses in disguise.
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")


class BadEntry(ValueError):
    """An allow-list entry that cannot be understood."""


def forbidden_address(ip: str) -> bool:
    """Loopback, private, link-local (cloud metadata), multicast, reserved or unspecified."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return not addr.is_global or addr.is_multicast


def ip_literal(host: str) -> str | None:
    """The normalised address when `host` is an IP literal (brackets allowed), else None."""
    try:
        return str(ipaddress.ip_address(host.removeprefix("[").removesuffix("]")))
    except ValueError:
        return None


def host_problem(host: str) -> str | None:
    """Why `host` is not a name the proxy will look up, or None."""
    name = host.lower().rstrip(".")
    if ip_literal(name) is not None:
        return "IP literals are refused; name the host (an address is reached only when the " \
               "config lists that exact address:port)"
    if len(name) > 253 or not _NAME.match(name):
        return "not a valid host name"
    if _NUMERIC_LABEL.match(name.rsplit(".", 1)[-1]):
        return "a numeric host name is an IP address in disguise; refused"
    return None


@dataclass(frozen=True)
class Entry:
    """One parsed allow-list entry."""

    text: str
    host: str  # a name, a `*.suffix` pattern, or a normalised address
    port: int | None  # None: the web ports
    address: bool = False

    def matches(self, host: str, port: int | None) -> bool:
        """Whether this entry lets `host` through on `port` (None: on any of its ports)."""
        if port is not None and port not in ((self.port,) if self.port is not None
                                             else WEB_PORTS):
            return False
        if self.address:
            return ip_literal(host) == self.host
        name = host.lower().rstrip(".")
        if self.host.startswith("*."):
            return name.endswith(self.host[1:])
        return name == self.host


def parse_entry(text: str) -> Entry:
    """An entry from its config spelling; `BadEntry` says what is wrong with it."""
    raw = text.strip().lower()
    host, port = raw, None
    match = re.fullmatch(r"(\[[0-9a-f:.]+\]|[^:\[\]]+):([0-9]{1,5})", raw)
    if match:
        host, port = match.group(1), int(match.group(2))
        if not 0 < port < 65536:
            raise BadEntry(f"{text!r}: port {port} is out of range")
    address = ip_literal(host)
    if address is not None:
        if port is None:
            raise BadEntry(f"{text!r}: an address is allowed only with its port, as "
                           "ADDRESS:PORT (e.g. 127.0.0.1:8080)")
        return Entry(text, address, port, address=True)
    name = host.rstrip(".")
    problem = host_problem(name.removeprefix("*."))
    if problem is not None or ("*" in name.removeprefix("*.")):
        raise BadEntry(f"{text!r}: {problem or 'a wildcard only as the first label (*.name)'}")
    return Entry(text, name, port)


class AllowList:
    """The entries a session may reach; grows when the user allows a host mid-session."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self._entries: list[Entry] = []
        for text in entries:
            self.add(text)

    def add(self, text: str) -> Entry:
        entry = parse_entry(text)
        if entry not in self._entries:
            self._entries.append(entry)
        return entry

    @property
    def texts(self) -> list[str]:
        return [e.text for e in self._entries]

    def match(self, host: str, port: int | None) -> Entry | None:
        return next((e for e in self._entries if e.matches(host, port)), None)

    def allows(self, host: str, port: int = 443) -> bool:
        return self.match(host, port) is not None
