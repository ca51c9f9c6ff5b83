"""Each tenant limit over real HTTP: a request over it is refused with 403 or 429 and a
message naming the limit; the API rate limit answers 429 with Retry-After."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import Gate, write_script
from tests.server.tenancy import add_user, priced, tenant_server
from tests.session.helpers import make_repo

# Each test runs on SQLite files and on a shared PostgreSQL database.
pytestmark = pytest.mark.usefixtures("tenant_backend")


def test_models_budget_and_daily_limits_are_refused_by_name(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    allowed = write_script(tmp_path / "allowed.json")
    other = write_script(tmp_path / "other.json")
    with tenant_server(tmp_path / "data", [tmp_path]) as (base, operator):
        alice = add_user(base, operator, "acme", "alice", "member")
        operator.ok("PATCH", "/tenants/acme/policy", json={
            "allowed_models": [f"scripted:{tmp_path}/allowed*"], "max_budget_usd": 1.5})

        alice.refused("POST", "/sessions", 403, f"model 'scripted:{other}' is not allowed",
                      "allowed_models", json={"task": "x", "repo": str(repo),
                                              "model": f"scripted:{other}"})
        alice.refused("POST", "/sessions", 403, "max_budget_usd", "$1.5",
                      json={"task": "x", "repo": str(repo), "model": f"scripted:{allowed}",
                            "budgets": {"max_cost_usd": 2}})
        # Without a budget of its own a session gets the tenant's cap, not the default $5.
        sid = alice.start(repo, allowed)
        done = alice.wait(sid, "finished")
        assert done["budgets"]["max_cost_usd"] == 1.5
        spent = done["cost_usd"]
        assert spent > 0

        operator.ok("PATCH", "/tenants/acme/policy", json={"max_usd_per_day": spent / 2})
        over = alice.refused("POST", "/sessions", 429, "max_usd_per_day", "spent $",
                             json={"task": "x", "repo": str(repo),
                                   "model": f"scripted:{allowed}"})
        assert 0 < int(over.headers["Retry-After"]) <= 24 * 3600
        # Nor does a finished session run again on feedback once the day is spent.
        alice.refused("POST", f"/sessions/{sid}/reject", 429, "max_usd_per_day",
                      json={"feedback": "more"})
        assert alice.ok("GET", f"/sessions/{sid}")["status"] == "finished"
        # Room left today lowers the next session's budget to what is left.
        operator.ok("PATCH", "/tenants/acme/policy", json={"max_usd_per_day": spent + 0.25})
        sid2 = alice.start(repo, allowed)
        assert abs(alice.ok("GET", f"/sessions/{sid2}")["budgets"]["max_cost_usd"]
                   - 0.25) < 1e-6
        alice.wait(sid2, "finished", "stopped")

        tokens = done["input_tokens"] + done["output_tokens"]
        operator.ok("PATCH", "/tenants/acme/policy",
                    json={"max_usd_per_day": None, "max_tokens_per_day": tokens})
        over = alice.refused("POST", "/sessions", 429, "max_tokens_per_day", "tokens today",
                             json={"task": "x", "repo": str(repo),
                                   "model": f"scripted:{allowed}"})
        assert int(over.headers["Retry-After"]) > 0
        # Another tenant has its own day.
        bob = add_user(base, operator, "globex", "bob", "member")
        bob.start(repo, other)


def test_concurrent_sessions_limit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = write_script(tmp_path / "s.json")
    gate = Gate()
    with tenant_server(tmp_path / "data", [tmp_path],
                       model_factory=priced(gate.factory())) as (base, operator):
        alice = add_user(base, operator, "acme", "alice", "member")
        carl = add_user(base, operator, "acme", "carl", "member")
        operator.ok("PATCH", "/tenants/acme/policy", json={"max_concurrent_sessions": 1})
        first = alice.start(repo, script)
        gate.wait_for_call()
        carl.refused("POST", "/sessions", 429, "already runs 1 sessions",
                     "max_concurrent_sessions",
                     json={"task": "x", "repo": str(repo), "model": f"scripted:{script}"})
        gate.open.set()
        alice.wait(first, "finished")
        carl.wait(carl.start(repo, script), "finished")


def test_rate_limit_answers_429_with_retry_after(tmp_path: Path) -> None:
    with tenant_server(tmp_path / "data", [tmp_path]) as (base, operator):
        alice = add_user(base, operator, "acme", "alice", "member")
        ann = add_user(base, operator, "acme", "ann", "admin")
        bob = add_user(base, operator, "globex", "bob", "member")
        operator.ok("PATCH", "/tenants/acme/policy", json={"requests_per_minute": 3})
        for client in (alice, ann, alice):
            client.ok("GET", "/whoami")
        over = ann.refused("GET", "/sessions", 429, "requests_per_minute: 3", "'acme'")
        assert 1 <= int(over.headers["Retry-After"]) <= 60
        alice.refused("GET", "/whoami", 429, "requests_per_minute")
        for _ in range(5):  # other tenants and the operator are not counted against acme
            bob.ok("GET", "/whoami")
            operator.ok("GET", "/whoami")
        operator.ok("PATCH", "/tenants/acme/policy", json={"requests_per_minute": None})
        alice.ok("GET", "/whoami")
