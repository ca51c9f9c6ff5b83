"""Runs or resumes a scripted session in its own process, optionally SIGKILLing itself at the
N-th observable point (an appended event, a streamed delta, or inside a command).

The test forks these processes from a server that imported this module once (multiprocessing's
forkserver): a fresh interpreter per process spent most of its CPU importing codeloop again."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from codeloop.index.warmup import wait_for_warmups
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.session.setup import build_runner, open_store, start_session
from tests.session.helpers import FIX_SCRIPT, settings

POINTS = {"n": 0, "kill_at": 0}


def point() -> None:
    POINTS["n"] += 1
    if POINTS["n"] == POINTS["kill_at"]:
        os.kill(os.getpid(), signal.SIGKILL)


def drive(data: Path, repo: Path, mode: str, kill_at: int, env: dict[str, str], out: Path) -> None:
    """One process's run (mode "start") or resume; its output and errors go to `out`, the
    result as the last line. `env` replaces the environment the forkserver started with."""
    os.environ.clear()
    os.environ.update(env)
    POINTS["kill_at"] = kill_at
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
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
                      "diff": runner.ctx.workspace.diff()}), flush=True)
    # What the interpreter's exit hook does; a forked child ends with os._exit, without it.
    wait_for_warmups()
