"""A session's life through the API, with the scripted model on a real repository."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.websockets import WebSocketDisconnect

from codeloop.llm.scripted import Turn
from tests.server.conftest import Api, Gate, write_script
from tests.session.helpers import BUGGY, FIXED, TEST_CMD, call, turn


def test_full_life_create_watch_review_apply(serve: Callable[..., Api], repo: Path,
                                             script: Path) -> None:
    api = serve()
    sid = api.create(repo, script, budgets={"max_steps": 20})
    detail = api.wait_status(sid, "finished")
    assert detail["steps"] == 5 and detail["edits"] == 1
    assert detail["budgets"]["max_steps"] == 20
    assert "adds" in detail["summary"]
    # Calls by role: exploring up to the first edit is planning, the rest coding.
    assert {r["role"]: r["calls"] for r in detail["by_model"]} == {"planner": 3, "coder": 2}
    events = api.events(sid)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "session_finished"
    assert [e["seq"] for e in api.events(sid, after=10)] == list(range(11, len(events) + 1))
    listed = api.ok("get", "/sessions", params={"status": "finished"})
    assert [s["id"] for s in listed] == [sid]
    assert api.ok("get", "/sessions", params={"status": "running"}) == []

    diff = api.ok("get", f"/sessions/{sid}/diff")
    assert diff["files"] == ["calc.py"] and "+    return a + b" in diff["diff"]
    assert (repo / "calc.py").read_text() == BUGGY, "nothing reaches the repo before apply"
    applied = api.ok("post", f"/sessions/{sid}/apply")
    assert applied["applied"] == ["calc.py"]
    assert (repo / "calc.py").read_text() == FIXED
    assert api.events(sid)[-1]["event"]["action"] == "apply"


def test_discard_throws_changes_away(serve: Callable[..., Api], repo: Path,
                                     script: Path) -> None:
    api = serve()
    sid = api.create(repo, script)
    api.wait_status(sid, "finished")
    api.ok("post", f"/sessions/{sid}/discard")
    assert api.ok("get", f"/sessions/{sid}/diff")["diff"] == ""
    assert (repo / "calc.py").read_text() == BUGGY
    assert api.events(sid)[-1]["event"]["action"] == "discard"


def test_bad_requests_get_clear_errors(serve: Callable[..., Api], tmp_path: Path,
                                       script: Path) -> None:
    api = serve()
    missing = api.post("/sessions", json={"task": "x", "repo": str(tmp_path / "nope"),
                                          "model": f"scripted:{script}"})
    assert missing.status_code == 400 and "does not exist" in missing.json()["detail"]
    assert api.post("/sessions", json={"task": "", "repo": "."}).status_code == 422
    assert api.get("/sessions/nosuchsession").status_code == 404
    assert api.client.get("/sessions").status_code == 401
    bad = api.client.get("/sessions", headers={"Authorization": "Bearer wrong"})
    assert bad.status_code == 401


def _ask_script() -> list[Turn]:
    return [
        turn(call("run", command=TEST_CMD)),
        turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
        turn(call("run", command=TEST_CMD)),
        turn(call("finish", summary="fixed")),
    ]


def test_approve_then_deny_with_reason_the_model_sees(serve: Callable[..., Api], repo: Path,
                                                      tmp_path: Path) -> None:
    api = serve()
    script = write_script(tmp_path / "ask.json", _ask_script())
    sid = api.create(repo, script, approval_mode="auto-edit")
    detail = api.wait_status(sid, "waiting_approval")
    [pending] = detail["pending_approvals"]
    assert pending["name"] == "run" and TEST_CMD in pending["summary"]
    assert api.ok("get", f"/sessions/{sid}/approvals") == [pending]
    assert api.post(f"/sessions/{sid}/approvals/nope/approve").status_code == 404
    api.ok("post", f"/sessions/{sid}/approvals/{pending['call_id']}/approve")

    detail = api.wait_status(sid, "waiting_approval")
    [second] = detail["pending_approvals"]
    assert second["call_id"] != pending["call_id"]
    api.ok("post", f"/sessions/{sid}/approvals/{second['call_id']}/deny",
           json={"reason": "no need to run tests twice"})
    api.wait_status(sid, "finished")
    events = api.events(sid)
    given = [e["event"] for e in events if e["type"] == "approval_given"]
    assert [g["approved"] for g in given] == [True, False]
    results = {e["event"]["call_id"]: e["event"] for e in events
               if e["type"] == "tool_call_finished"}
    ran = results[pending["call_id"]]
    assert not ran["interrupted"] and "FAILED" in ran["output"], "the approved call ran"
    denied = results[second["call_id"]]
    assert not denied["ok"] and "no need to run tests twice" in denied["error"]


def test_approve_and_remember_allows_the_same_command_later(
        serve: Callable[..., Api], repo: Path, tmp_path: Path) -> None:
    api = serve()
    script = write_script(tmp_path / "ask.json", _ask_script())
    sid = api.create(repo, script, approval_mode="auto-edit")
    [pending] = api.wait_status(sid, "waiting_approval")["pending_approvals"]
    api.ok("post", f"/sessions/{sid}/approvals/{pending['call_id']}/approve",
           params={"remember": True})
    detail = api.wait_status(sid, "finished")
    assert detail["remembered_rules"] == [pending["remember_rule"]]
    events = api.events(sid)
    assert sum(e["type"] == "approval_requested" for e in events) == 1
    [given] = [e["event"] for e in events if e["type"] == "approval_given"]
    assert given["remember_rule"] == pending["remember_rule"]
    decisions = [e["event"] for e in events if e["type"] == "policy_decided"]
    assert decisions[-2]["decision"] == "allow" and pending["remember_rule"] in decisions[-2]["rule"]


def test_reject_with_feedback_continues_the_session(serve: Callable[..., Api], repo: Path,
                                                    tmp_path: Path) -> None:
    api = serve()
    turns = [
        turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
        turn(call("finish", summary="first try")),
        turn(call("write_file", path="NOTES.md", content="add() fixed\n")),
        turn(call("finish", summary="second try, with notes")),
    ]
    sid = api.create(repo, write_script(tmp_path / "s.json", turns))
    assert api.wait_status(sid, "finished")["summary"].startswith("first try")
    api.ok("post", f"/sessions/{sid}/reject", json={"feedback": "also write NOTES.md"})
    detail = api.wait(sid, lambda d: d["summary"].startswith("second try, with notes")
                      and not d["active"])
    assert detail["status"] == "finished" and detail["steps"] == 4
    types = [e["type"] for e in api.events(sid)]
    assert types.count("session_finished") == 2
    reject = types.index("review_decided")
    assert types[reject - 1] == "user_message" and "session_resumed" in types[reject:]
    assert sorted(api.ok("get", f"/sessions/{sid}/diff")["files"]) == ["NOTES.md", "calc.py"]


def test_cancel_a_waiting_session(serve: Callable[..., Api], repo: Path,
                                  tmp_path: Path) -> None:
    api = serve()
    sid = api.create(repo, write_script(tmp_path / "a.json", _ask_script()),
                     approval_mode="auto-edit")
    api.wait_status(sid, "waiting_approval")
    [pending] = api.ok("get", f"/sessions/{sid}/approvals")
    api.ok("post", f"/sessions/{sid}/cancel")
    detail = api.wait_status(sid, "cancelled")
    assert detail["pending_approvals"] == []
    assert api.post(f"/sessions/{sid}/cancel").status_code == 409
    assert api.post(f"/sessions/{sid}/approvals/{pending['call_id']}/approve").status_code == 404
    assert api.post(f"/sessions/{sid}/resume").status_code == 409


def test_cancel_and_pause_resume_a_running_session(serve: Callable[..., Api], repo: Path,
                                                   script: Path) -> None:
    gate = Gate()
    api = serve(model_factory=gate.factory())
    sid = api.create(repo, script)
    gate.wait_for_call()
    api.ok("post", f"/sessions/{sid}/pause")
    assert api.post(f"/sessions/{sid}/resume").status_code == 409, "still running its step"
    gate.open.set()
    detail = api.wait_status(sid, "paused")
    paused_at = detail["steps"]
    assert paused_at < 5
    api.ok("post", f"/sessions/{sid}/resume")
    detail = api.wait_status(sid, "finished")
    assert detail["steps"] == 5
    assert "session_resumed" in [e["type"] for e in api.events(sid)]

    gate.close()
    other = api.create(repo, script)
    gate.wait_for_call()
    api.ok("post", f"/sessions/{other}/cancel")
    gate.open.set()
    assert api.wait_status(other, "stopped")["steps"] == 1


def test_users_cannot_see_or_touch_each_others_sessions(
        serve: Callable[..., Api], repo: Path, tmp_path: Path, data_dir: Path) -> None:
    from codeloop.server.auth import TokenStore

    admin = serve()
    alice = Api(admin.client, TokenStore(data_dir).create("alice"))
    bob = Api(admin.client, TokenStore(data_dir).create("bob"))
    assert alice.ok("get", "/whoami") == {"user": "alice", "tenant": "default", "role": "member"}
    sid = alice.create(repo, write_script(tmp_path / "a.json", _ask_script()),
                       approval_mode="auto-edit")
    [pending] = alice.wait_status(sid, "waiting_approval")["pending_approvals"]
    assert [s["id"] for s in bob.ok("get", "/sessions")] == []
    assert admin.ok("get", "/sessions") == []
    for method, url in [
        ("get", f"/sessions/{sid}"), ("get", f"/sessions/{sid}/events"),
        ("get", f"/sessions/{sid}/diff"), ("get", f"/sessions/{sid}/approvals"),
        ("post", f"/sessions/{sid}/approvals/{pending['call_id']}/approve"),
        ("post", f"/sessions/{sid}/approvals/{pending['call_id']}/deny"),
        ("post", f"/sessions/{sid}/cancel"), ("post", f"/sessions/{sid}/pause"),
        ("post", f"/sessions/{sid}/resume"), ("post", f"/sessions/{sid}/apply"),
        ("post", f"/sessions/{sid}/discard"),
    ]:
        assert getattr(bob, method)(url).status_code == 404, url
    assert bob.post(f"/sessions/{sid}/reject", json={"feedback": "x"}).status_code == 404
    with pytest.raises(WebSocketDisconnect) as closed, bob.client.websocket_connect(
            f"/sessions/{sid}/stream?token={bob.token}"):
        pass
    assert closed.value.code == 4404
    assert alice.ok("get", f"/sessions/{sid}")["status"] == "waiting_approval"
    assert [s["id"] for s in alice.ok("get", "/sessions")] == [sid]
