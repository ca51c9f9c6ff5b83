"""Plans through the API: listed as pending approvals with their steps, denied with a reason
the model sees, approved (and remembered), and invisible to other users."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codeloop.config_tables import RolesSettings
from codeloop.server.auth import TokenStore
from tests.planner.helpers import STEPS, WORK, propose
from tests.server.conftest import DEFAULTS, Api, write_script
from tests.session.test_roles_plan import REPLAN_SCRIPT


def test_pending_plan_is_listed_denied_then_approved(serve: Callable[..., Api], repo: Path,
                                                     tmp_path: Path) -> None:
    api = serve()
    script = write_script(tmp_path / "plan.json",
                          [propose("p1"), propose("p2", summary="revised"),
                           propose("p3", summary="third"), *WORK])
    sid = api.create(repo, script, plan_approval=True)
    detail = api.wait_status(sid, "waiting_approval")
    [pending] = detail["pending_approvals"]
    assert pending["kind"] == "plan" and pending["call_id"] == "p1"
    assert pending["plan"]["approval"] == "pending"
    assert [s["id"] for s in pending["plan"]["steps"]] == [s["id"] for s in STEPS]
    assert pending["plan"]["steps"][1]["depends_on"] == ["read"]
    assert detail["plan"] is None
    assert api.ok("get", f"/sessions/{sid}/approvals") == [pending]
    assert api.post(f"/sessions/{sid}/resume").status_code == 409

    api.ok("post", f"/sessions/{sid}/approvals/p1/deny", json={"reason": "too vague"})
    [second] = api.wait(sid, lambda d: not d["active"] and d["pending_approvals"]
                        and d["pending_approvals"][0]["call_id"] == "p2")["pending_approvals"]
    assert second["plan"]["summary"] == "revised"
    denied = next(e for e in api.events(sid) if e["type"] == "tool_call_finished")
    assert "rejected this plan: too vague" in denied["event"]["error"]

    api.ok("post", f"/sessions/{sid}/approvals/p2/approve", params={"remember": True})
    final = api.wait_status(sid, "finished")
    assert final["plan"]["summary"] == "third", "a remembered plan approval stops the asking"
    assert final["plan"]["approval"] == "approved"
    assert final["plan"]["done"] == final["plan"]["total"] == 3
    assert final["remembered_rules"] == ["propose_plan"]
    kinds = [e["type"] for e in api.events(sid)]
    assert kinds.count("plan_proposed") == 3 and kinds.count("plan_updated") == 2
    assert kinds.count("approval_requested") == 2


def test_another_user_cannot_see_or_answer_a_plan(serve: Callable[..., Api], repo: Path,
                                                  tmp_path: Path, data_dir: Path) -> None:
    admin = serve()
    alice = Api(admin.client, TokenStore(data_dir).create("alice"))
    bob = Api(admin.client, TokenStore(data_dir).create("bob"))
    sid = alice.create(repo, write_script(tmp_path / "p.json", [propose("p1"), *WORK]),
                       approval_mode="ask")
    [pending] = alice.wait_status(sid, "waiting_approval")["pending_approvals"]
    assert pending["kind"] == "plan"
    assert bob.get(f"/sessions/{sid}/approvals").status_code == 404
    assert bob.post(f"/sessions/{sid}/approvals/p1/approve").status_code == 404
    assert bob.post(f"/sessions/{sid}/approvals/p1/deny", json={"reason": "x"}).status_code == 404
    assert alice.ok("get", f"/sessions/{sid}")["pending_approvals"] == [pending]


def test_a_session_with_roles_shows_its_steps_revision_and_role_budgets(
        serve: Callable[..., Api], repo: Path, tmp_path: Path) -> None:
    roles = RolesSettings(enabled=True, review=False)
    api = serve(defaults=DEFAULTS.model_copy(update={"roles": roles}))
    sid = api.create(repo, write_script(tmp_path / "roles.json", REPLAN_SCRIPT))
    final = api.wait(sid, lambda d: d["status"] == "finished" and not d["active"], timeout=90)
    assert final["plan"]["revision"] == 1
    assert [(s["id"], s["status"]) for s in final["plan"]["steps"]] == [("read", "done"),
                                                                        ("fix", "done")]
    assert final["plan"]["steps"][1]["done_when"].startswith("command: ")
    budgets = {b["name"]: b for b in final["role_budgets"]}
    assert set(budgets) == {"planner", "coder", "reviewer", "explorer"}
    assert budgets["planner"]["turns"] == 2 and budgets["coder"]["turns"] == 5
    kinds = [e["type"] for e in api.events(sid)]
    assert kinds.count("plan_revised") == 1 and kinds.count("step_checked") == 2
