"""Whose memories a session or a server user has: one person, one set of memories.

The command line's sessions belong to `local`; the server's admin is the person who holds
the data directory's admin token, the same person whose command line made those sessions
(the admin already sees them: `server.auth.visible_owners`). So the admin's memories are
the local owner's, whether written through `codeloop memory`, a session's `remember`, or
the API. Every other user has only their own.
"""

from __future__ import annotations

from codeloop.session.store import ADMIN_OWNER, LOCAL_OWNER


def memory_owner(owner: str) -> str:
    """The user a session owner's or a token user's memories are stored under."""
    return LOCAL_OWNER if owner == ADMIN_OWNER else owner


# Rows stored under the admin by a codeloop older than this module: the store moves them to
# the local owner whenever it opens (`SQLiteMemoryStore`, `PostgresMemoryStore`).
MERGED_OWNERS = ((ADMIN_OWNER, LOCAL_OWNER),)
