"""`request_network`: the model asks the user to let commands reach one more host."""

from __future__ import annotations

from pydantic import Field

from codeloop.events import NetworkHostAllowed
from codeloop.sandbox.egress_rules import BadEntry, parse_entry
from codeloop.session.network import NETWORK, SessionNetwork
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext


class RequestNetworkArgs(ToolArgs):
    host: str = Field(description="The host: a name such as docs.python.org (web ports), "
                      "*.example.org for its subdomains, or name:port.")
    reason: str = Field(description="Why the task needs it, in one sentence for the user.")


class RequestNetwork(Tool):
    """Only a person can grant this (the policy never allows it by itself)."""

    name = "request_network"
    description = (
        "Ask the user to let this session's commands reach one more host through the proxy, "
        "after a command was refused for it. The user decides; addresses and private "
        "networks are never granted this way."
    )
    args_model = RequestNetworkArgs
    tier = "network"

    def run(self, args: RequestNetworkArgs, ctx: ToolContext) -> Observation:
        network = ctx.services.get(NETWORK)
        if not isinstance(network, SessionNetwork):
            return Observation(ok=False, error="this session has no network: commands run "
                               "without one; the user turns it on with [network] in the config")
        try:
            entry = parse_entry(args.host)
        except BadEntry as exc:
            return Observation(ok=False, error=str(exc))
        if entry.address:
            return Observation(ok=False, error="an address is reached only when the user lists "
                               "it in the config ([network] allow); ask for a host name")
        network.allow(entry.text)
        ctx.emit(NetworkHostAllowed(entry=entry.text, reason=args.reason))
        return Observation(ok=True, output=f"{entry.text} is allowed for the rest of this "
                           "session; run the command again.")
