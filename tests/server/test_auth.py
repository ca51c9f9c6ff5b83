"""Tokens: made on first start, stored 0600, one user per token."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from codeloop.cli import main
from codeloop.server.auth import ADMIN_USER, TokenStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_admin_token_made_once_with_private_permissions(tmp_path: Path) -> None:
    first = TokenStore(tmp_path)
    token = first.admin_token
    assert len(token) >= 32 and _mode(first.admin_path) == 0o600
    assert TokenStore(tmp_path).admin_token == token, "a restart keeps the token"
    assert first.user_for(token) == ADMIN_USER
    assert first.user_for("") is None and first.user_for(token + "x") is None


def test_user_tokens_map_to_their_users(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path)
    alice, bob, alice2 = tokens.create("alice"), tokens.create("bob"), tokens.create("alice")
    assert _mode(tokens.users_path) == 0o600
    assert [tokens.user_for(t) for t in (alice, bob, alice2)] == ["alice", "bob", "alice"]
    assert json.loads(tokens.users_path.read_text())[bob] == "bob"


def test_token_command_prints_a_working_token(tmp_path: Path, capsys: object) -> None:
    assert main(["token", "carol", "--data-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.strip()  # type: ignore[attr-defined]
    assert TokenStore(tmp_path).user_for(printed) == "carol"
    assert main(["token", ADMIN_USER, "--data-dir", str(tmp_path)]) == 2
