"""The WebSocket tail: missed events first, then live ones; no gap and no duplicate across
reconnects at any sequence number."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.llm.scripted import Turn
from tests.server.conftest import Api, Gate, write_script
from tests.session.helpers import call, turn


def _long_script(reads: int) -> list[Turn]:
    return [*(turn(call("read_file", path="calc.py"), text=f"look {n}") for n in range(reads)),
            turn(call("finish", summary="done"))]


def _receive(ws: Any) -> dict[str, Any]:
    message: dict[str, Any] = ws.receive_json()
    return message


def test_stream_sends_history_then_live_events(serve: Callable[..., Api], repo: Path,
                                              script: Path) -> None:
    gate = Gate()
    api = serve(model_factory=gate.factory())
    sid = api.create(repo, script)
    gate.wait_for_call()
    with api.client.websocket_connect(f"/sessions/{sid}/stream?token={api.token}") as ws:
        first = _receive(ws)
        assert first["seq"] == 1 and first["type"] == "session_started"
        assert first["event"]["task"] == "make the tests pass"
        gate.open.set()
        seen = [first]
        while seen[-1]["type"] != "session_finished":
            seen.append(_receive(ws))
    assert seen == api.events(sid)


def test_stream_accepts_the_token_in_a_header(serve: Callable[..., Api], repo: Path,
                                              script: Path) -> None:
    api = serve()
    sid = api.create(repo, script)
    api.wait_status(sid, "finished")
    last = api.events(sid)[-1]["seq"]
    with api.client.websocket_connect(f"/sessions/{sid}/stream?after={last - 2}",
                                      headers=api.headers) as ws:
        assert [_receive(ws)["seq"] for _ in range(2)] == [last - 1, last]


def test_reconnects_at_random_points_lose_and_repeat_nothing(
        serve: Callable[..., Api], repo: Path, tmp_path: Path) -> None:
    rng = random.Random(7)
    api = serve()
    sid = api.create(repo, write_script(tmp_path / "long.json", _long_script(25)))
    got: list[dict[str, Any]] = []
    while not got or got[-1]["type"] != "session_finished":
        after = got[-1]["seq"] if got else 0
        url = f"/sessions/{sid}/stream?after={after}&token={api.token}"
        with api.client.websocket_connect(url) as ws:
            for _ in range(rng.randint(1, 9)):
                got.append(_receive(ws))
                if got[-1]["type"] == "session_finished":
                    break
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    assert got == api.events(sid)

    final = got[-1]["seq"]
    for after in rng.sample(range(final), 8):
        url = f"/sessions/{sid}/stream?after={after}&token={api.token}"
        with api.client.websocket_connect(url) as ws:
            tail = [_receive(ws) for _ in range(final - after)]
        assert tail == got[after:]


def test_stream_refuses_a_bad_token(serve: Callable[..., Api], repo: Path,
                                    script: Path) -> None:
    import pytest
    from starlette.websockets import WebSocketDisconnect

    api = serve()
    sid = api.create(repo, script)
    with pytest.raises(WebSocketDisconnect) as closed, api.client.websocket_connect(
            f"/sessions/{sid}/stream?token=nope"):
        pass
    assert closed.value.code == 4401


def test_another_server_process_streams_a_session_it_does_not_run(
        serve: Callable[..., Api], repo: Path, script: Path) -> None:
    gate = Gate()
    runner_side = serve(model_factory=gate.factory())
    sid = runner_side.create(repo, script)
    gate.wait_for_call()
    # A second app on the same data dir: it learns of appends only by reading the log.
    reader = serve(resume_on_start=False, poll_s=0.05)
    with reader.client.websocket_connect(f"/sessions/{sid}/stream?token={reader.token}") as ws:
        seen = [_receive(ws)]
        gate.open.set()
        while seen[-1]["type"] != "session_finished":
            seen.append(_receive(ws))
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert seen == runner_side.events(sid)
