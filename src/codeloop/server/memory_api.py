"""The API's long-term memory endpoints: a token's user manages their own memories (and sees
the team memories of repositories the server lets them open), and a session lists the
memories its model was shown."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi import status as http_status
from pydantic import BaseModel, ConfigDict, Field

from codeloop.config import Settings
from codeloop.events import MemoryRecalled, MemoryStored
from codeloop.memory.owners import memory_owner
from codeloop.memory.records import MAX_TEXT_CHARS, Memory, MemoryNotFound
from codeloop.server.roots import RepoNotAllowed, allowed_repo
from codeloop.server.service import SessionService
from codeloop.session.memory_admin import MemoryAdmin, open_admin
from codeloop.session.setup import session_redactor


class MemoryOut(BaseModel):
    id: str
    user: str
    kind: str
    scope: str
    text: str
    source: str
    repo: str
    session_id: str
    event_seq: int
    created: float
    last_used: float
    ttl_s: float
    expires: float
    uses: int
    provenance: str


class MemoryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    kind: Literal["fact", "correction"] = "fact"
    scope: Literal["repo", "user", "team"] = "repo"
    repo: str | None = Field(default=None, description="Absolute path; needed unless scope is user.")
    ttl_days: float | None = Field(default=None, gt=0)


class UsedMemoryOut(BaseModel):
    """A memory a session's model was shown (`task`, `step`, `tool`) or stored (`remember`);
    `memory` is null once it is forgotten or expired."""

    seq: int
    how: str
    query: str = ""
    id: str
    memory: MemoryOut | None


def memory_out(memory: Memory) -> MemoryOut:
    return MemoryOut(**memory.public(), provenance=memory.provenance())


def memory_router(user_of: Callable[..., str], service: SessionService, data_dir: Path,
                  errors: dict[int | str, dict[str, Any]]) -> APIRouter:
    """The routes, authenticated by `user_of` as every other route is."""
    router = APIRouter(tags=["memory"], responses=errors)
    redactor = session_redactor(service.defaults or Settings())

    def may_open(repo: str) -> bool:
        try:
            allowed_repo(repo, service.roots)
        except RepoNotAllowed:
            return False
        return True

    def admin(user: str) -> MemoryAdmin:
        # The memories live where the server's events do (its PostgreSQL database, if any).
        # The admin's are the command line's (`memory.owners`): one person, one set.
        url = getattr(service.store, "url", None)
        return open_admin(data_dir, memory_owner(user), redactor, may_open,
                          url if isinstance(url, str) else None)

    def repo_path(repo: str | None) -> Path | None:
        return None if repo is None else allowed_repo(repo, service.roots)

    @router.get("/memories")
    async def list_memories(user: str = Depends(user_of), repo: str | None = None,
                            kind: str | None = None) -> list[MemoryOut]:
        """Your memories and the team's (on `repo`, or on every repository you may open)."""
        return [memory_out(m) for m in admin(user).listing(repo_path(repo), kind)]

    @router.get("/memories/export")
    async def export_memories(user: str = Depends(user_of),
                              repo: str | None = None) -> dict[str, Any]:
        """Your own memories as `codeloop memory export` writes them."""
        return admin(user).export(repo_path(repo))

    @router.post("/memories/import")
    async def import_memories(document: dict[str, Any],
                              user: str = Depends(user_of)) -> dict[str, object]:
        """Add an export's memories as yours, each checked; refusals are listed."""
        result = await asyncio.to_thread(admin(user).import_, document)
        return result.public()

    @router.get("/memories/{memory_id}")
    async def get_memory(memory_id: str, user: str = Depends(user_of)) -> MemoryOut:
        return memory_out(admin(user).show(memory_id))

    @router.post("/memories", status_code=http_status.HTTP_201_CREATED)
    async def add_memory(body: MemoryIn, user: str = Depends(user_of)) -> MemoryOut:
        """Store a memory; 400 with the reason when it looks like instructions or holds a
        secret."""
        memory = admin(user).add(body.text, body.kind, body.scope, repo_path(body.repo),
                                 body.ttl_days, source="api")
        return memory_out(memory)

    @router.delete("/memories/{memory_id}")
    async def forget_memory(memory_id: str,
                            user: str = Depends(user_of)) -> dict[str, list[str]]:
        """Delete one of your memories for good (from recall and from the store's file)."""
        gone = await asyncio.to_thread(admin(user).forget, [memory_id])
        return {"forgotten": gone}

    @router.get("/sessions/{session_id}/memories")
    async def session_memories(session_id: str, user: str = Depends(user_of),
                               after: int = Query(0, ge=0)) -> list[UsedMemoryOut]:
        """The memories the session's model was shown or stored, in the order of its log."""
        row = service.owned(session_id, user)
        owner = admin(row.owner)
        out = []
        for stored in service.events(row.id, after):
            event = stored.event
            used: list[tuple[str, str, str]]
            if isinstance(event, MemoryRecalled):
                used = [(i, event.trigger, event.query) for i in event.ids]
            elif isinstance(event, MemoryStored):
                used = [(event.id, "remember", "")]
            else:
                continue
            for memory_id, how, query in used:
                try:
                    memory: MemoryOut | None = memory_out(owner.show(memory_id))
                except MemoryNotFound:
                    memory = None
                out.append(UsedMemoryOut(seq=stored.seq, how=how, query=query, id=memory_id,
                                         memory=memory))
        return out

    return router
