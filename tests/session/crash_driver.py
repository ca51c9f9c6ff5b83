"""Runs or resumes a scripted session in its own process, optionally SIGKILLing itself at the
N-th observable point (an appended event, a streamed delta, or inside a command)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.session.setup import build_runner, open_store, start_session
from tests.session.helpers import FIX_SCRIPT, settings

POINTS = {"n": 0}


def point() -> None:
    POINTS["n"] += 1
    if POINTS["n"] == int(os.environ.get("KILL_AT", "0")):
        os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    data, repo, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    # The crash points are in the loop; verification runs would only slow the 100 processes.
    cfg = settings().model_copy(update={"verify_on_finish": False})
    # Longer thoughts give more points inside model streams to kill at.
    turns = [Turn(text=f"Step {n}: {t.text} thinking about what to do next here", tool_calls=t.tool_calls)
             for n, t in enumerate(FIX_SCRIPT)]
    model = ScriptedModel(turns)
    store = open_store(data)
    if mode == "start":
        sid = start_session(store, "make the tests pass", repo, cfg, model.name, session_id="s1")
    else:
        sid = "s1"
    runner = build_runner(store, sid, repo, cfg, model, base_dir=data,
                          on_event=lambda _e: point(), on_delta=lambda _d: point())
    inner = runner.ctx.sandbox

    class KillingSandbox:
        name = "killing"

        def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
                limits: Limits | None = None) -> CommandResult:
            point()
            result = inner.run(command, cwd, env, limits)
            point()
            return result

    runner.ctx.sandbox = KillingSandbox()
    state = runner.run()
    print(json.dumps({"status": state.status, "points": POINTS["n"],
                      "diff": runner.ctx.workspace.diff()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
