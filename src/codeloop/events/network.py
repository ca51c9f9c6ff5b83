"""Events of the session's network: what the egress proxy decided, hosts the user allowed."""

from __future__ import annotations

from typing import Literal

from codeloop.events.base import EventBase


class EgressDecided(EventBase):
    """A sandboxed command asked the egress proxy for a host; allowed or refused, and why."""

    type: Literal["egress_decided"] = "egress_decided"
    method: str
    host: str
    port: int
    allowed: bool
    reason: str


class NetworkHostAllowed(EventBase):
    """The user allowed an allow-list entry for the rest of this session."""

    type: Literal["network_host_allowed"] = "network_host_allowed"
    entry: str
    reason: str = ""
