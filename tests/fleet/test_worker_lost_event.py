"""The `worker_lost` event: stored and read back typed, shown by the terminal renderer."""

from __future__ import annotations

import io

from rich.console import Console

from codeloop.cli.render import LiveRenderer
from codeloop.events import StoredEvent, WorkerLost, parse_event_json
from codeloop.session.state import fold


def test_worker_lost_round_trips_and_leaves_the_session_running() -> None:
    event = WorkerLost(attempt=2, error="The actor died unexpectedly", gave_up=False)
    back = parse_event_json(event.model_dump_json())
    assert isinstance(back, WorkerLost) and back == event
    assert fold([StoredEvent("s", 1, event)]).status != "paused"


def test_the_terminal_shows_a_lost_worker_and_what_happened_next() -> None:
    out = io.StringIO()
    renderer = LiveRenderer(Console(file=out, width=200, force_terminal=False))
    renderer.on_event(StoredEvent("s", 7, WorkerLost(attempt=1, error="node [b]gone[/b]")))
    renderer.on_event(StoredEvent("s", 8, WorkerLost(attempt=3, error="again", gave_up=True)))
    text = out.getvalue()
    assert "worker lost (placement 1, placed again): node [b]gone[/b]" in text
    assert "worker lost (placement 3, paused): again" in text
