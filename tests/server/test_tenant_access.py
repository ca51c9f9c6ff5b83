"""Roles and tenant boundaries over real HTTP: a viewer reads but cannot approve, deny,
apply or start; a user of one tenant cannot open another tenant's repositories or sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.llm.scripted import Turn
from codeloop.server.auth import TokenStore
from tests.server.conftest import write_script
from tests.server.tenancy import Client, add_user, tenant_server
from tests.session.helpers import BUGGY, FIXED, TEST_CMD, call, make_repo, turn

# Each test runs on SQLite files and on a shared PostgreSQL database.
pytestmark = pytest.mark.usefixtures("tenant_backend")


def _ask_script() -> list[Turn]:
    return [turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
            turn(call("run", command=TEST_CMD)),
            turn(call("finish", summary="fixed"))]


def test_viewer_reads_but_cannot_approve_deny_apply_or_start(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = write_script(tmp_path / "ask.json", _ask_script())
    with tenant_server(tmp_path / "data", [tmp_path]) as (base, operator):
        alice = add_user(base, operator, "acme", "alice", "member")
        vic = add_user(base, operator, "acme", "vic", "viewer")
        assert vic.ok("GET", "/whoami") == {"user": "vic", "tenant": "acme", "role": "viewer"}
        sid = alice.start(repo, script, approval_mode="auto-edit")
        [pending] = alice.wait(sid, "waiting_approval")["pending_approvals"]
        call_id = pending["call_id"]
        assert [s["id"] for s in vic.ok("GET", "/sessions")] == [sid]
        assert vic.ok("GET", f"/sessions/{sid}/approvals")[0]["call_id"] == call_id
        for action in ("approve", "deny"):
            vic.refused("POST", f"/sessions/{sid}/approvals/{call_id}/{action}", 403,
                        "'vic' is a viewer in tenant 'acme'", "cannot")
        vic.refused("POST", f"/sessions/{sid}/cancel", 403, "viewer")
        vic.refused("POST", "/sessions", 403, "viewer", "cannot start sessions",
                    json={"task": "x", "repo": str(repo), "model": f"scripted:{script}"})
        assert alice.ok("GET", f"/sessions/{sid}")["status"] == "waiting_approval"

        alice.ok("POST", f"/sessions/{sid}/approvals/{call_id}/approve")
        alice.wait(sid, "finished")
        vic.refused("POST", f"/sessions/{sid}/apply", 403, "cannot apply changes")
        vic.refused("POST", f"/sessions/{sid}/discard", 403, "viewer")
        assert (repo / "calc.py").read_text() == BUGGY
        assert alice.ok("POST", f"/sessions/{sid}/apply")["applied"] == ["calc.py"]
        assert (repo / "calc.py").read_text() == FIXED


def test_tenant_admin_steers_the_tenants_sessions_and_a_member_only_their_own(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = write_script(tmp_path / "ask.json", _ask_script())
    with tenant_server(tmp_path / "data", [tmp_path]) as (base, operator):
        alice = add_user(base, operator, "acme", "alice", "member")
        carl = add_user(base, operator, "acme", "carl", "member")
        ann = add_user(base, operator, "acme", "ann", "admin")
        sid = alice.start(repo, script, approval_mode="auto-edit")
        [pending] = alice.wait(sid, "waiting_approval")["pending_approvals"]
        carl.refused("GET", f"/sessions/{sid}", 404)
        carl.refused("POST", f"/sessions/{sid}/approvals/{pending['call_id']}/approve", 404)
        ann.ok("POST", f"/sessions/{sid}/approvals/{pending['call_id']}/approve")
        assert ann.wait(sid, "finished")["status"] == "finished"
        events = alice.ok("GET", f"/sessions/{sid}/events")
        given = [e for e in events if e["type"] == "approval_given"]
        assert given[0]["event"]["by"] == "ann"


def test_another_tenants_root_and_sessions_are_closed(tmp_path: Path) -> None:
    acme_repo, globex_repo = make_repo(tmp_path / "acme"), make_repo(tmp_path / "globex")
    script = write_script(tmp_path / "ask.json", _ask_script())
    with tenant_server(tmp_path / "data", [tmp_path]) as (base, operator):
        alice = add_user(base, operator, "acme", "alice", "member")
        bob = add_user(base, operator, "globex", "bob", "member")
        gia = add_user(base, operator, "globex", "gia", "admin")
        operator.ok("PATCH", "/tenants/acme/policy",
                    json={"allowed_roots": [str(tmp_path / "acme")]})
        operator.ok("PATCH", "/tenants/globex/policy",
                    json={"allowed_roots": [str(tmp_path / "globex")]})
        bob.refused("POST", "/sessions", 403, str(globex_repo.parent.parent / "acme" / "repo"),
                    "outside tenant 'globex'", "allowed_roots",
                    json={"task": "x", "repo": str(acme_repo), "model": f"scripted:{script}"})
        # A link inside globex's root pointing into acme's is resolved first: still closed.
        (tmp_path / "globex" / "door").symlink_to(acme_repo)
        bob.refused("POST", "/sessions", 403, "outside tenant 'globex'",
                    json={"task": "x", "repo": str(tmp_path / "globex" / "door"),
                          "model": f"scripted:{script}"})

        sid = alice.start(acme_repo, script, approval_mode="auto-edit")
        [pending] = alice.wait(sid, "waiting_approval")["pending_approvals"]
        for who in (bob, gia):
            assert who.ok("GET", "/sessions") == []
            who.refused("GET", f"/sessions/{sid}", 404)
            who.refused("GET", f"/sessions/{sid}/diff", 404)
            who.refused("POST", f"/sessions/{sid}/approvals/{pending['call_id']}/approve", 404)
            who.refused("POST", f"/sessions/{sid}/cancel", 404)
        # globex's admin manages globex only.
        gia.refused("PUT", "/tenants/acme/users/mallory", 403, "cannot add or change users",
                    json={"role": "admin"})
        gia.refused("PUT", "/tenants/globex/users/alice", 403, "operator",
                    json={"role": "member"})
        gia.refused("POST", "/tenants/acme/users/alice/tokens", 403)
        gia.refused("GET", "/tenants/acme", 403)
        gia.refused("PATCH", "/tenants/globex/policy", 403, "only the server's operator",
                    json={"max_usd_per_day": 1000})
        assert bob.ok("GET", f"/sessions/{bob.start(globex_repo, script)}")["repo"] == str(
            globex_repo)

        # A root taken away later stops the session's later uses too.
        operator.ok("PATCH", "/tenants/acme/policy",
                    json={"allowed_roots": [str(tmp_path / "elsewhere")]})
        alice.refused("GET", f"/sessions/{sid}/diff", 403, "outside tenant 'acme'")


def test_tokens_made_before_tenants_keep_working_in_the_default_tenant(
        tmp_path: Path, tenant_backend: str) -> None:
    data = tmp_path / "data"
    old = TokenStore(data).create("olduser")
    repo = make_repo(tmp_path)
    with tenant_server(data, [tmp_path]) as (base, operator):
        user = Client(base, old)
        assert user.ok("GET", "/whoami") == {"user": "olduser", "tenant": "default",
                                             "role": "member"}
        if tenant_backend == "postgres":  # imported into the shared table, once
            assert not (data / "tokens.json").exists()
            assert (data / "tokens.json.imported").exists()
        sid = user.start(repo, write_script(tmp_path / "s.json"))
        assert user.wait(sid, "finished")["status"] == "finished"
        migrated = [e["event"] for e in operator.ok("GET", "/audit")
                    if e["event"].get("action") == "user.migrate"]
        assert [(m["target"], m["tenant"]) for m in migrated] == [("olduser", "default")]
