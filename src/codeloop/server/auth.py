"""Bearer tokens: an admin token made on first start, more tokens mapped to users in a file
(`tokens.json`), or in the tenant store's PostgreSQL database when the server runs on one,
so a token made through one server process works on every other."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path

from codeloop.errors import CodeloopError
from codeloop.private_paths import FILE_MODE, private_dir, tighten
from codeloop.server.tenant_db import TenantDb
from codeloop.session.store import ADMIN_OWNER, LOCAL_OWNER

ADMIN_USER = ADMIN_OWNER
# Names no token in tokens.json may carry: the admin's, and the command line's sessions' owner.
RESERVED_USERS = (ADMIN_USER, LOCAL_OWNER)


def visible_owners(user: str) -> tuple[str, ...]:
    """Whose sessions `user` sees: their own; the admin (who holds the server-token file in
    the data directory, so is the person whose command line made the local sessions) also
    sees the sessions `codeloop run` made there."""
    return (ADMIN_USER, LOCAL_OWNER) if user == ADMIN_USER else (user,)


class TokenFileError(CodeloopError):
    """The token file cannot be read or written."""


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, created 0600 from the start (no window)."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


class TokenStore:
    """`<data_dir>/server-token` holds the admin token; `<data_dir>/tokens.json` maps others,
    or the `tokens` table of a shared tenant database (`db`) does."""

    def __init__(self, data_dir: Path, db: TenantDb | None = None) -> None:
        self.admin_path = data_dir / "server-token"
        self.users_path = data_dir / "tokens.json"
        private_dir(data_dir)
        if not self.admin_path.exists():
            _write_private(self.admin_path, secrets.token_urlsafe(32) + "\n")
        for path in (self.admin_path, self.users_path):  # files from before, or copied in
            tighten(path, FILE_MODE)
        self._db = db if db is not None and db.shared else None
        if self._db is not None:
            self._import_file()

    @property
    def location(self) -> str:
        """Where user tokens are kept, for messages."""
        return ("the PostgreSQL tenant store (as a SHA-256 digest)" if self._db is not None
                else f"{self.users_path} (mode 0600)")

    def _import_file(self) -> None:
        """Move the tokens of a tokens.json from before the server used PostgreSQL into the
        table, once: the file is renamed, so a token revoked later does not come back."""
        if not self.users_path.exists():
            return
        for token, user in self._file_users().items():
            self._add(token, user)
        os.replace(self.users_path, self.users_path.with_name("tokens.json.imported"))

    @property
    def admin_token(self) -> str:
        return self.admin_path.read_text().strip()

    def _add(self, token: str, user: str) -> None:
        assert self._db is not None
        # Only a digest is stored: the table never holds a usable token.
        self._db.rows("INSERT INTO tokens (digest, owner, created) VALUES (?, ?, ?) "
                      "ON CONFLICT DO NOTHING", (_digest(token), user, time.time()))

    def _owners(self) -> dict[str, str]:
        """fingerprint -> user of every user token."""
        if self._db is None:
            return {fingerprint(t): u for t, u in self._file_users().items()}
        return {str(d)[:_FINGERPRINT]: str(u)
                for d, u in self._db.rows("SELECT digest, owner FROM tokens")}

    def _file_users(self) -> dict[str, str]:
        if not self.users_path.exists():
            return {}
        try:
            data = json.loads(self.users_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise TokenFileError(f"cannot read {self.users_path}: {exc}",
                                 "fix or delete the file; it maps token -> user name") from exc
        if not isinstance(data, dict):
            raise TokenFileError(f"{self.users_path} must hold a JSON object token -> user")
        return {str(k): str(v) for k, v in data.items()}

    def create(self, user: str) -> str:
        """A new token for `user` (a user may hold several)."""
        if not user or user in RESERVED_USERS:
            raise TokenFileError(f"cannot make a token for {user!r}",
                                 f"pick a user name other than {' or '.join(RESERVED_USERS)}")
        token = secrets.token_urlsafe(32)
        if self._db is not None:
            self._add(token, user)
            return token
        users = self._file_users()
        users[token] = user
        _write_private(self.users_path, json.dumps(users, indent=2) + "\n")
        return token

    def users(self) -> list[str]:
        """Every user holding a token."""
        return sorted(set(self._owners().values()))

    def revoke(self, token_fingerprint: str) -> str:
        """Remove the token with this fingerprint; returns its user."""
        user = self._owners().get(token_fingerprint)
        if user is None:
            raise TokenFileError(f"no token with fingerprint {token_fingerprint!r}",
                                 "list them with `codeloop tenant show TENANT`")
        if self._db is not None:
            self._db.rows("DELETE FROM tokens WHERE starts_with(digest, ?)", (token_fingerprint,))
            return user
        users = {t: u for t, u in self._file_users().items()
                 if fingerprint(t) != token_fingerprint}
        _write_private(self.users_path, json.dumps(users, indent=2) + "\n")
        return user

    def tokens_of(self, user: str) -> list[str]:
        """The fingerprints of the user's tokens."""
        return [fp for fp, u in self._owners().items() if u == user]

    def user_for(self, token: str) -> str | None:
        """The user a token belongs to; comparisons are constant-time."""
        if not token:
            return None
        found = None
        if hmac.compare_digest(token.encode(), self.admin_token.encode()):
            found = ADMIN_USER
        if self._db is not None:
            # Looked up by its digest: the lookup's timing says nothing about the token.
            rows = self._db.rows("SELECT owner FROM tokens WHERE digest = ?", (_digest(token),))
            user = str(rows[0][0]) if rows else None
            return found or (user if user != LOCAL_OWNER else None)
        for known, user in self._file_users().items():
            # A hand-written entry for the command line's owner would show its sessions.
            if hmac.compare_digest(token.encode(), known.encode()) and user != LOCAL_OWNER:
                found = user
        return found


_FINGERPRINT = 12


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def fingerprint(token: str) -> str:
    """A short name for a token that can be shown and logged without revealing it."""
    return _digest(token)[:_FINGERPRINT]
