"""The server continues a session with the settings in its log, the way `codeloop resume`
does: the recorded endpoint, any override recorded since, and the server's own key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codeloop.events import ModelCallFinished, SettingsOverridden
from codeloop.session.setup import open_store, start_session
from tests.cli.test_cli import fix_replies
from tests.llm.fake_server import FakeProvider, Reply, openai_stream
from tests.server.conftest import DEFAULTS, Api


def test_a_recovered_session_runs_on_its_recorded_and_overridden_endpoint(
        serve: Callable[..., Api], repo: Path, data_dir: Path) -> None:
    first = Reply(sse=openai_stream("", [("c0", "read_file", '{"path": "calc.py"}')]))
    started_on = FakeProvider().start()
    moved_to = FakeProvider(replies=[first, *fix_replies()[1:]]).start()
    try:
        store = open_store(data_dir)
        recorded = DEFAULTS.model_copy(update={"model": "openai:m",
                                               "base_url": started_on.url + "/v1"})
        sid = start_session(store, "make the tests pass", repo, recorded, "openai:m",
                            owner="admin")
        # As `codeloop resume ID --base-url ...` records it before the run it starts.
        store.append(sid, [SettingsOverridden(changes={"base_url": moved_to.url + "/v1"})])
        key = "sk-the-servers-own-key-77"
        api = serve(defaults=DEFAULTS.model_copy(update={"api_key": key}))
        detail = api.wait_status(sid, "finished", "error", "paused")
    finally:
        started_on.stop()
        moved_to.stop()
    assert detail["status"] == "finished", detail
    assert not started_on.requests and len(moved_to.requests) == 4
    headers = [{k.lower(): v for k, v in r["headers"].items()} for r in moved_to.requests]
    assert all(h["authorization"] == f"Bearer {key}" for h in headers)
    assert any(isinstance(e.event, ModelCallFinished) for e in store.read(sid))
