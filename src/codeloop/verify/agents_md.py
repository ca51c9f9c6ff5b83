"""Verification commands named in a project's AGENTS.md.

Two forms are read (the first `test` wins; the other keys accumulate):

1. a fenced block whose info string is `verify`:

       ```verify
       test: python -m pytest -q
       lint: ruff check .
       typecheck: mypy src
       security: bandit -r src
       ```

2. anywhere outside code fences, a line that starts with one of the keys and a colon,
   optionally as a list item and with the command in backticks:
   `Test: pytest -q`, `- Lint: \\`ruff check .\\``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.workspace.hostfs import SafeRoot

_KEYS = {"test": "test", "tests": "test", "lint": "lint", "typecheck": "typecheck",
         "type check": "typecheck", "types": "typecheck", "security": "security"}
_LINE = re.compile(
    r"^\s*(?:[-*]\s+)?\**(?P<key>tests?|lint|typecheck|type check|types|security)\**\s*:\s*(?P<cmd>.+?)\s*$",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*(?P<info>[\w-]*)")


@dataclass
class NamedCommands:
    test: str | None = None
    lint: list[str] = field(default_factory=list)
    typecheck: list[str] = field(default_factory=list)
    security: list[str] = field(default_factory=list)

    def add(self, key: str, command: str) -> None:
        command = command.strip()
        if command.startswith("`") and command.endswith("`"):
            command = command.strip("`").strip()
        if not command:
            return
        category = _KEYS[key.lower()]
        if category == "test":
            self.test = self.test or command
        else:
            getattr(self, category).append(command)

    def empty(self) -> bool:
        return not (self.test or self.lint or self.typecheck or self.security)


def parse_agents_md(text: str) -> NamedCommands:
    found = NamedCommands()
    fence: str | None = None
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if marker:
            fence = None if fence is not None else marker["info"].lower()
            continue
        if fence is not None and fence != "verify":
            continue
        entry = _LINE.match(line)
        if entry:
            found.add(entry["key"], entry["cmd"])
    return found


def read_agents_md(root: Path) -> NamedCommands:
    """The commands from `AGENTS.md` at the project root (empty when there is none)."""
    data = SafeRoot(root).read_if_file("AGENTS.md")  # a link there is no AGENTS.md
    return NamedCommands() if data is None else parse_agents_md(data.decode("utf-8", "replace"))
