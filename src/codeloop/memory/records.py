"""What a long-term memory is: its text, kind, scope, owner, repository and provenance."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from codeloop.errors import CodeloopError

MemoryKind = Literal["fact", "correction", "episode"]
Scope = Literal["user", "repo", "team"]
# Who wrote it: the model (`remember`), a person (`cli`, `import`, `api`), or a capture
# from the session's log (a denial, a plan refused, a review rejected, the episode).
Source = Literal["remember", "cli", "import", "api", "denial", "plan", "review", "episode"]
KINDS: tuple[str, ...] = get_args(MemoryKind)
SCOPES: tuple[str, ...] = get_args(Scope)
SOURCES: tuple[str, ...] = get_args(Source)

DAY_S = 86_400.0
# A memory unused this long expires (each recall that shows it renews it); an episode goes
# stale sooner than a convention the user stated.
DEFAULT_TTL_S: dict[str, float] = {"fact": 365 * DAY_S, "correction": 365 * DAY_S,
                                   "episode": 90 * DAY_S}
MAX_TEXT_CHARS = 1_000


def repo_identity(repo: Path) -> str:
    """How memories name a repository: its resolved path (docs/memory.md says why not its
    remote or first commit)."""
    return str(repo.resolve())


class MemoryNotFound(CodeloopError):
    """No memory with that id is visible to this user (HTTP 404)."""


@dataclass(frozen=True)
class NewMemory:
    """A memory about to be stored. `capture_key` makes a capture from the log idempotent:
    a resumed session that sees the same denial again does not store it twice."""

    user: str
    kind: MemoryKind
    scope: Scope
    text: str
    source: Source
    repo: str = ""
    session_id: str = ""
    event_seq: int = 0
    ttl_s: float | None = None
    capture_key: str | None = None


@dataclass(frozen=True)
class Memory:
    """A stored memory. `repo` is the repository's resolved path ("" for user scope)."""

    id: str
    user: str
    kind: MemoryKind
    scope: Scope
    text: str
    source: Source
    repo: str
    session_id: str
    event_seq: int
    created: float
    last_used: float
    ttl_s: float
    uses: int

    @property
    def expires(self) -> float:
        return self.last_used + self.ttl_s

    def provenance(self) -> str:
        """Where it came from, in a few words, for the prompt and the listings."""
        day = time.strftime("%Y-%m-%d", time.gmtime(self.created))
        origin = (f"session {self.session_id} event {self.event_seq}" if self.session_id
                  else f"added by {self.source}")
        return f"{self.kind}, {self.source}, {origin}, user {self.user}, {day}"

    def public(self) -> dict[str, object]:
        """As the CLI's --json, `export` and the API show it."""
        return {"id": self.id, "user": self.user, "kind": self.kind, "scope": self.scope,
                "text": self.text, "source": self.source, "repo": self.repo,
                "session_id": self.session_id, "event_seq": self.event_seq,
                "created": self.created, "last_used": self.last_used, "ttl_s": self.ttl_s,
                "expires": self.expires, "uses": self.uses}


@dataclass(frozen=True)
class Hit:
    """A memory a recall found, with its fused score (higher is better)."""

    memory: Memory
    score: float
