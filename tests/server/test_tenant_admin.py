"""Administration over real HTTP and from the command line: every change to a tenant, user,
token or limit lands in the audit log with who made it; the server enforces what the CLI set."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from codeloop.cli import main
from tests.server.conftest import write_script
from tests.server.tenancy import Client, add_user, tenant_server
from tests.session.helpers import make_repo

# Each test runs on SQLite files and on a shared PostgreSQL database.
pytestmark = pytest.mark.usefixtures("tenant_backend")


def test_every_admin_action_is_audited(tmp_path: Path) -> None:
    with tenant_server(tmp_path / "data", [tmp_path]) as (base, operator):
        operator.ok("POST", "/tenants", json={"name": "acme",
                                              "policy": {"max_usd_per_day": 10}})
        operator.ok("PATCH", "/tenants/acme/policy",
                    json={"max_usd_per_day": 20, "allowed_models": ["openai:*"]})
        operator.ok("PUT", "/tenants/acme/users/ann", json={"role": "admin"})
        made = operator.ok("POST", "/tenants/acme/users/ann/tokens")
        ann = Client(base, made["token"])
        ann.ok("PUT", "/tenants/acme/users/alice", json={"role": "viewer"})
        alice_token = ann.ok("POST", "/tenants/acme/users/alice/tokens")
        alice = Client(base, alice_token["token"])
        assert alice.ok("GET", "/whoami")["role"] == "viewer"
        ann.ok("DELETE", f"/tokens/{alice_token['fingerprint']}")
        alice.refused("GET", "/whoami", 401)
        bob = add_user(base, operator, "globex", "bob", "admin")

        log = operator.ok("GET", "/audit")
        acme = [(e["event"]["actor"], e["event"]["action"], e["event"]["target"])
                for e in log if e["event"]["tenant"] == "acme"]
        assert acme == [("admin", "tenant.create", "acme"), ("admin", "policy.set", "acme"),
                        ("admin", "user.set", "ann"), ("admin", "token.create", "ann"),
                        ("ann", "user.set", "alice"), ("ann", "token.create", "alice"),
                        ("ann", "token.revoke", "alice")]
        policy_set = next(e["event"] for e in log if e["event"]["action"] == "policy.set")
        assert policy_set["details"]["changes"] == {
            "max_usd_per_day": {"from": 10.0, "to": 20.0},
            "allowed_models": {"from": None, "to": ["openai:*"]}}
        assert made["token"] not in json.dumps(log), "the audit log never holds a token"
        assert made["fingerprint"] in json.dumps(log)
        assert [e["seq"] for e in log] == sorted(e["seq"] for e in log)
        # A tenant admin reads their own tenant's log; a member or another tenant does not.
        assert {e["event"]["tenant"] for e in ann.ok("GET", "/audit")} == {"acme"}
        bob.refused("GET", "/audit?tenant=acme", 403)
        assert {e["event"]["tenant"] for e in bob.ok("GET", "/audit")} == {"globex"}
        after = log[-1]["seq"]
        operator.ok("PATCH", "/tenants/globex/policy", json={"requests_per_minute": 100})
        [latest] = operator.ok("GET", f"/audit?after={after}")
        assert latest["event"]["action"] == "policy.set"


def test_cli_manages_tenants_and_the_server_enforces_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    repo = make_repo(tmp_path / "acme")
    script = write_script(tmp_path / "s.json")
    d = ["--data-dir", str(data)]
    assert main(["tenant", "add", "acme", *d]) == 0
    assert main(["tenant", "set", "acme", "--allow-root", str(tmp_path / "acme"),
                 "--allow-model", "scripted:*", "--max-budget-usd", "1", *d]) == 0
    assert main(["tenant", "user", "vic", "--tenant", "acme", "--role", "viewer", *d]) == 0
    capsys.readouterr()
    assert main(["token", "alice", "--tenant", "acme", *d]) == 0
    alice_token = capsys.readouterr().out.strip()
    assert main(["token", "vic", *d]) == 0
    vic_token = capsys.readouterr().out.strip()
    assert main(["tenant", "add", "bad name", *d]) == 2
    assert main(["tenant", "user", "x", "--tenant", "nope", *d]) == 2
    assert main(["tenant", "set", "acme", "--clear", "max_budget_usd", *d]) == 0
    capsys.readouterr()
    assert main(["tenant", "show", "acme", "--json", *d]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["policy"]["max_budget_usd"] is None
    assert shown["policy"]["allowed_roots"] == [str((tmp_path / "acme").resolve())]
    assert {u["user"]: u["role"] for u in shown["users"]} == {"alice": "member",
                                                             "vic": "viewer"}

    assert main(["audit", "--json", *d]) == 0
    actions = [(e["event"]["actor"], e["event"]["action"], e["event"]["target"])
               for e in json.loads(capsys.readouterr().out)]
    me = f"cli:{getpass.getuser()}"
    assert actions == [(me, "tenant.create", "acme"), (me, "policy.set", "acme"),
                       (me, "user.set", "vic"), (me, "user.set", "alice"),
                       (me, "token.create", "alice"), (me, "token.create", "vic"),
                       (me, "policy.set", "acme")]

    with tenant_server(data, [tmp_path]) as (base, operator):
        alice, vic = Client(base, alice_token), Client(base, vic_token)
        assert vic.ok("GET", "/whoami")["role"] == "viewer"
        alice.refused("POST", "/sessions", 403, "allowed_models",
                      json={"task": "x", "repo": str(repo), "model": "openai:gpt-4.1"})
        outside = make_repo(tmp_path / "other")
        alice.refused("POST", "/sessions", 403, "allowed_roots",
                      json={"task": "x", "repo": str(outside), "model": f"scripted:{script}"})
        alice.wait(alice.start(repo, script), "finished")
        assert len(operator.ok("GET", "/audit")) == len(actions)

    fingerprint = shown["users"][1]["tokens"][0]
    assert main(["tenant", "revoke", fingerprint, *d]) == 0
    with tenant_server(data, [tmp_path]) as (base, _):
        Client(base, vic_token).refused("GET", "/whoami", 401)
        Client(base, alice_token).ok("GET", "/whoami")
