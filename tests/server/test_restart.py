"""A server that stops mid-session leaves it to the next server, which finishes it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from codeloop.server.service import SERVER_SHUTDOWN
from codeloop.session.setup import open_store, start_session
from tests.server.conftest import DEFAULTS, Api, Gate


def test_restart_mid_session_resumes_and_completes(serve: Callable[..., Api], repo: Path,
                                                   script: Path) -> None:
    gate = Gate()
    first = serve(model_factory=gate.factory())
    sid = first.create(repo, script)
    gate.wait_for_call()
    pool = first.client.app.state.service.pool  # type: ignore[attr-defined]
    control = pool.control(sid)
    closer = threading.Thread(target=first.client.__exit__, args=(None, None, None))
    closer.start()
    assert control.pause.wait(timeout=30)
    gate.open.set()
    closer.join(timeout=60)
    assert not closer.is_alive()

    store = open_store(first.client.app.state.service.data_dir)  # type: ignore[attr-defined]
    row = store.get(sid)
    assert row.status == "paused" and row.steps == 1
    assert store.read(sid)[-1].event.reason == SERVER_SHUTDOWN  # type: ignore[union-attr]

    second = serve()
    detail = second.wait_status(sid, "finished")
    assert detail["steps"] == 5
    types = [e["type"] for e in second.events(sid)]
    assert types.count("session_resumed") == 1 and types.count("model_call_finished") == 5


def test_a_session_left_running_by_a_crash_is_resumed(serve: Callable[..., Api], repo: Path,
                                                     script: Path, data_dir: Path) -> None:
    store = open_store(data_dir)
    settings = DEFAULTS.model_copy(update={"model": f"scripted:{script}"})
    sid = start_session(store, "make the tests pass", repo, settings, "scripted", owner="admin")
    assert store.get(sid).status == "running"
    api = serve()
    assert api.wait_status(sid, "finished")["steps"] == 5


def test_user_paused_sessions_stay_paused_after_restart(serve: Callable[..., Api], repo: Path,
                                                        script: Path) -> None:
    gate = Gate()
    first = serve(model_factory=gate.factory())
    sid = first.create(repo, script)
    gate.wait_for_call()
    first.ok("post", f"/sessions/{sid}/pause")
    gate.open.set()
    first.wait_status(sid, "paused")
    second = serve()
    assert second.ok("get", f"/sessions/{sid}")["status"] == "paused"
    assert not second.ok("get", f"/sessions/{sid}")["active"]


def test_a_session_that_cannot_start_ends_with_the_reason(
        serve: Callable[..., Api], repo: Path, tmp_path: Path, data_dir: Path) -> None:
    store = open_store(data_dir)
    gone = tmp_path / "gone.json"
    settings = DEFAULTS.model_copy(update={"model": f"scripted:{gone}"})
    sid = start_session(store, "make the tests pass", repo, settings, "scripted", owner="admin")
    api = serve()
    detail = api.wait_status(sid, "error")
    assert "cannot start the session" in detail["finish_reason"]
    assert "gone.json" in detail["finish_reason"]
