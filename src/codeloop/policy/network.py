"""Does a shell command look like it reaches the network? (Used for the taint rule.)"""

from __future__ import annotations

import re

from codeloop.policy.shell import ShellAnalysis, SimpleCommand

_NETWORK_PROGRAMS = {
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "rsync", "telnet",
    "ftp", "tftp", "nslookup", "dig", "host", "ping", "ping6", "http", "https", "xh", "aria2c",
    "lftp", "mosh", "openssl", "gh", "hub", "twine", "axel", "torsocks", "proxychains",
    "proxychains4",
}
# program -> subcommands that fetch or publish
_NETWORK_SUBCOMMANDS: dict[str, set[str]] = {
    "git": {"push", "fetch", "clone", "pull", "ls-remote", "remote", "submodule", "send-email",
            "request-pull", "archive"},
    "pip": {"install", "download", "wheel", "search", "index"},
    "uv": {"pip", "add", "sync", "lock", "tool", "run", "venv", "python"},
    "poetry": {"add", "install", "update", "lock", "publish", "search"},
    "pipx": {"install", "run", "upgrade", "inject"},
    "npm": {"install", "i", "ci", "add", "update", "publish", "exec", "x", "view", "info"},
    "npx": set(),
    "yarn": {"add", "install", "upgrade", "publish", "dlx"},
    "pnpm": {"add", "install", "i", "update", "publish", "dlx"},
    "bun": {"add", "install", "x"},
    "cargo": {"install", "fetch", "publish", "update", "search", "add"},
    "go": {"get", "install", "mod"},
    "gem": {"install", "fetch", "push", "update"},
    "bundle": {"install", "update"},
    "composer": {"install", "require", "update"},
    "apt": {"install", "update", "download", "upgrade"},
    "apt-get": {"install", "update", "download", "upgrade", "source"},
    "apk": {"add", "update", "fetch"},
    "dnf": {"install", "update", "download"},
    "yum": {"install", "update"},
    "brew": {"install", "update", "fetch", "upgrade"},
    "docker": {"pull", "push", "run", "login", "build"},
    "podman": {"pull", "push", "run", "login", "build"},
    "conda": {"install", "create", "update"},
    "mamba": {"install", "create", "update"},
    "huggingface-cli": {"download", "upload", "login"},
}
_NETWORK_CODE = re.compile(
    r"\b(socket|urllib|urlopen|requests\.|httpx|http\.client|aiohttp|fetch\(|XMLHttpRequest|"
    r"net\.connect|https?://|IO::Socket|LWP|Net::HTTP|open-uri)"
)
_DEV_NET = re.compile(r"^/dev/(tcp|udp)/")


def command_network_reason(cmd: SimpleCommand) -> str | None:
    """Why `cmd` looks like network access, or None."""
    name = cmd.name
    if name in _NETWORK_PROGRAMS:
        return f"`{name}` reaches the network"
    args = [a for a in cmd.argv[1:] if not a.startswith("-")]
    if name.rstrip("0123456789.") in ("python", "pip") and cmd.argv[1:3] == ("-m", "pip"):
        args = [a for a in cmd.argv[3:] if not a.startswith("-")]
        name = "pip"
    if name.rstrip("0123456789.") == "pip":
        name = "pip"
    subs = _NETWORK_SUBCOMMANDS.get(name)
    if subs is not None and (not subs or (args and args[0] in subs)):
        return f"`{' '.join([name, *args[:1]])}` reaches the network"
    if any(_DEV_NET.match(a) for a in cmd.argv[1:]):
        return "opens a /dev/tcp or /dev/udp socket"
    if cmd.inline_code and _NETWORK_CODE.search(cmd.inline_code):
        return f"inline `{name}` code uses the network"
    return None


def network_reason(analysis: ShellAnalysis) -> str | None:
    """Why this command line looks like network access, or None."""
    for target in analysis.redirect_targets:
        if _DEV_NET.match(target):
            return "redirects to a /dev/tcp or /dev/udp socket"
    for cmd in analysis.commands:
        reason = command_network_reason(cmd)
        if reason:
            return reason
    return None
