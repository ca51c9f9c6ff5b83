"""Starts a gated session that SIGKILLs itself right after its first edit is recorded."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from codeloop.events import StoredEvent, ToolCallFinished
from codeloop.session.setup import build_runner, open_store, start_session
from tests.session.helpers import scripted, settings
from tests.session.test_baseline_resume import SCRIPT, gated


def die_after_edit(stored: StoredEvent) -> None:
    if isinstance(stored.event, ToolCallFinished) and stored.event.name == "edit_file":
        os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    data, repo = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = gated(settings())
    model = scripted(SCRIPT)
    store = open_store(data)
    sid = start_session(store, "make the tests pass", repo, cfg, model.name, session_id="s1")
    build_runner(store, sid, repo, cfg, model, base_dir=data, on_event=die_after_edit).run()
    return 1  # never reached: the process kills itself after the edit


if __name__ == "__main__":
    sys.exit(main())
