"""A session's network: the egress proxy its sandboxed commands reach the world through.

Off unless the user's config turns it on (`[network]`). The sandbox keeps its own network
namespace; the proxy's unix socket, bound inside, is its only way out. Every decision the
proxy makes becomes an `EgressDecided` event after the command that caused it, and a
refusal is explained in the command's output so the model and the user can act on it.
"""

from __future__ import annotations

import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path

from codeloop.config import Settings
from codeloop.config_tables import NetworkSettings
from codeloop.events import EgressDecided
from codeloop.sandbox.egress import EgressProxy, EgressRecord
from codeloop.sandbox.egress_rules import AllowList, Entry
from codeloop.sandbox.environment import host_tmp
from codeloop.sandbox.factory import choose_backend
from codeloop.sandbox.upper import remove_tree

# The ToolContext service under which tools find the session's network.
NETWORK = "network"
# At most this many refusals are spelled out after one command (all are in the log).
_SHOWN = 5


def _close(proxy: EgressProxy, directory: Path) -> None:
    proxy.close()
    remove_tree(directory)


class SessionNetwork:
    """The running proxy of one session, and the allow-list it enforces."""

    def __init__(self, settings: NetworkSettings, added: Sequence[str] = ()) -> None:
        # A short private directory: a unix socket path must fit in 108 bytes.
        self.directory = Path(tempfile.mkdtemp(prefix="codeloop-net-", dir=host_tmp()))
        self.proxy = EgressProxy(AllowList(settings.allow), self.directory / "egress.sock")
        for entry in added:
            self.proxy.allow.add(entry)
        self.proxy.start()
        self._finalizer = weakref.finalize(self, _close, self.proxy, self.directory)

    def close(self) -> None:
        self._finalizer()

    def allow(self, text: str) -> Entry:
        """Add an entry (the user allowed it) for the rest of the session."""
        return self.proxy.allow.add(text)

    @property
    def allowed(self) -> list[str]:
        return self.proxy.allow.texts

    def take_events(self) -> tuple[list[EgressDecided], str]:
        """The proxy's decisions since the last call, as events, and the note on refusals."""
        records = self.proxy.take_records()
        events = [EgressDecided(method=r.method, host=r.host, port=r.port, allowed=r.allowed,
                                reason=r.reason) for r in records]
        return events, refusal_note(records, self.allowed)


def refusal_note(records: Sequence[EgressRecord], allowed: Sequence[str]) -> str:
    """What the model reads after a command some of whose requests were refused."""
    refused = list(dict.fromkeys((r.host, r.port, r.reason) for r in records if not r.allowed))
    if not refused:
        return ""
    lines = [f"[network] the egress proxy refused {len(refused)} request(s):"]
    lines += [f"- {host}:{port}: {reason}" for host, port, reason in refused[:_SHOWN]]
    if len(refused) > _SHOWN:
        lines.append(f"- ... and {len(refused) - _SHOWN} more (see the session log)")
    lines.append("Allowed hosts: " + (", ".join(allowed) or "none") + ". If the task needs "
                 "another host, call request_network to ask the user; addresses and private "
                 "networks stay refused.")
    return "\n".join(lines)


def network_active(settings: Settings) -> bool:
    """Whether the session's commands get the proxy: the config turns the network on and
    they run under bwrap (Docker sessions have none; unsandboxed ones use the host's)."""
    return settings.network.on and settings.sandbox \
        and choose_backend(settings.sandbox_backend) == "bwrap"
