"""A person's hands on their memories, shared by `codeloop memory` and the server's API:
list, show, add, forget, export and import, for one user, checked as the model's
`remember` is (memory_guard.py), and never showing a team memory of a repository the user
may not open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.errors import CodeloopError
from codeloop.memory.records import (
    DAY_S,
    MAX_TEXT_CHARS,
    Memory,
    MemoryKind,
    MemoryNotFound,
    NewMemory,
    Scope,
    Source,
    repo_identity,
)
from codeloop.memory.store import MemoryStore
from codeloop.memory.stores import open_memory_store
from codeloop.policy.redact import Redactor
from codeloop.session.memory_guard import MemoryGuard, MemoryRefusedError

EXPORT_VERSION = 1


class MemoryFileError(CodeloopError):
    """An import file is not a memory export."""


class ExportedMemory(BaseModel):
    """One memory in an export file: what `import` takes back (its owner is whoever
    imports it, never the name written in the file)."""

    model_config = ConfigDict(extra="ignore")

    kind: MemoryKind = "fact"
    scope: Scope = "repo"
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    repo: str = ""
    session_id: str = ""
    event_seq: int = 0
    ttl_s: float | None = Field(default=None, gt=0)


class ExportFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: int
    memories: list[dict[str, Any]]


@dataclass
class ImportResult:
    """What an import did: ids added, how many were already there, and each refusal."""

    added: list[str] = field(default_factory=list)
    existing: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)

    def public(self) -> dict[str, object]:
        return {"added": self.added, "existing": self.existing,
                "refused": [{"index": i, "reason": r} for i, r in self.refused]}


def _everywhere(_: str) -> bool:
    return True


class MemoryAdmin:
    """`user`'s memories; `may_open(repo)` says whether the user may open a repository
    (the server's allowed roots), which decides whether its team memories are shown."""

    def __init__(self, store: MemoryStore, user: str, guard: MemoryGuard,
                 may_open: Callable[[str], bool] = _everywhere) -> None:
        self.store = store
        self.user = user
        self.guard = guard
        self.may_open = may_open

    def _visible(self, memory: Memory) -> bool:
        return memory.user == self.user or self.may_open(memory.repo)

    def listing(self, repo: Path | None = None, kind: str | None = None) -> list[Memory]:
        """Memories on `repo` (the user's own of user scope included), or all when None."""
        found = self.store.listing(self.user, None if repo is None else repo_identity(repo))
        return [m for m in found if self._visible(m) and (kind is None or m.kind == kind)]

    def show(self, memory_id: str) -> Memory:
        memory = self.store.get(memory_id, self.user)
        if not self._visible(memory):
            raise MemoryNotFound(f"no memory {memory_id!r}",
                                 "list them with `codeloop memory list --all`")
        return memory

    def add(self, text: str, kind: MemoryKind = "fact", scope: Scope = "repo",
            repo: Path | None = None, ttl_days: float | None = None,
            source: Source = "cli") -> Memory:
        """Store what a person wrote; refused (MemoryRefusedError) as `remember` would be."""
        name = self._repo_for(scope, repo)
        memory = self.store.add(NewMemory(
            user=self.user, kind=kind, scope=scope, text=self.guard.check(text),
            source=source, repo=name, ttl_s=None if ttl_days is None else ttl_days * DAY_S))
        assert memory is not None  # no capture key: never a duplicate
        return memory

    def _repo_for(self, scope: Scope, repo: Path | None) -> str:
        if scope == "user":
            return ""
        if repo is None or not repo.is_dir():
            raise MemoryRefusedError(f"a {scope} memory needs the repository it is about",
                                     "name it with --repo PATH (or use --scope user)")
        name = repo_identity(repo)
        if not self.may_open(name):
            raise MemoryRefusedError(f"you may not open {name}", "name an allowed repository")
        return name

    def forget(self, ids: Sequence[str]) -> list[str]:
        """Delete the user's own memories (each id or unique prefix) for good."""
        full = []
        for memory_id in ids:
            memory = self.show(memory_id)
            if memory.user != self.user:
                raise MemoryNotFound(f"memory {memory.id} is {memory.user}'s team memory",
                                     "only the person who stored it can forget it")
            full.append(memory.id)
        return self.store.forget(full, self.user)

    def export(self, repo: Path | None = None) -> dict[str, object]:
        """The user's own memories (not the team's) as an export document."""
        mine = [m.public() for m in self.listing(repo) if m.user == self.user]
        return {"version": EXPORT_VERSION, "user": self.user, "memories": mine}

    def import_(self, document: object) -> ImportResult:
        """Add an export's memories as the user's, each checked; one refused or malformed
        entry is reported and the rest still imported."""
        try:
            parsed = ExportFile.model_validate(document)
        except ValidationError as exc:
            raise MemoryFileError("not a codeloop memory export: " + _first_error(exc),
                                  "make one with `codeloop memory export`") from exc
        if parsed.version != EXPORT_VERSION:
            raise MemoryFileError(f"memory export version {parsed.version} is not known",
                                  f"this codeloop reads version {EXPORT_VERSION}")
        result = ImportResult()
        # The same text on the same scope and repository is there once, however often a
        # file is imported (or an export is imported back where it came from).
        have = {(m.scope, m.repo, m.text) for m in self.store.listing(self.user)
                if m.user == self.user}
        for index, raw in enumerate(parsed.memories):
            try:
                item = ExportedMemory.model_validate(raw)
                repo = self._repo_for(item.scope, Path(item.repo) if item.repo else None)
                text = self.guard.check(item.text)
            except ValidationError as exc:
                result.refused.append((index, _first_error(exc)))
                continue
            except MemoryRefusedError as exc:
                result.refused.append((index, exc.message))
                continue
            if (item.scope, repo, text) in have:
                result.existing += 1
                continue
            added = self.store.add(NewMemory(
                user=self.user, kind=item.kind, scope=item.scope, text=text, source="import",
                repo=repo, session_id=item.session_id, event_seq=item.event_seq,
                ttl_s=item.ttl_s))
            assert added is not None  # no capture key: never a duplicate
            have.add((item.scope, repo, text))
            result.added.append(added.id)
        return result


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc']) or 'document'}: {err['msg']}"


def open_admin(data: Path, user: str, redactor: Redactor,
               may_open: Callable[[str], bool] = _everywhere,
               database_url: str | None = None) -> MemoryAdmin:
    """The admin over the memory store: in PostgreSQL at `database_url` if set, else in the
    data directory `data`."""
    return MemoryAdmin(open_memory_store(data, database_url), user, MemoryGuard(redactor),
                       may_open)
