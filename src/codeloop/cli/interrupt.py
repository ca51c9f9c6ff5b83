"""Ctrl-C while a session runs: the first pauses it, a second quits at once.

The first cuts a running command or model call (never a log append or a file write, see
`Control.critical`), the runner records the pause, and the CLI exits 6 with the way back.
A second leaves without any cleanup; the log is still whole (every append is one SQLite
transaction) and the session resumes from its last complete step.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from codeloop.sandbox.process import kill_running
from codeloop.session.control import Control

PAUSED_EXIT = 6


class CtrlC:
    """The SIGINT handler for one session's run."""

    def __init__(self, session_id: str, control: Control) -> None:
        self.session_id = session_id
        self.control = control
        self.pressed = False
        # Once the loop has returned there is nothing left to pause: a press only hurries
        # the exit, with the code the session's status gives.
        self.loop_done_exit: int | None = None

    def _say(self, text: str) -> None:
        # os.write, not rich: a signal can land while rich holds its console.
        os.write(2, f"\n{text}\n".encode())

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        resume = f"`codeloop resume {self.session_id}` continues the session"
        if self.pressed or self.loop_done_exit is not None:
            self._say(f"quit at once; {resume}")
            kill_running()  # a sandbox dies with us; a command run without one would not
            os._exit(PAUSED_EXIT if self.loop_done_exit is None else self.loop_done_exit)
        self.pressed = True
        self._say(f"pausing session {self.session_id} (Ctrl-C again quits at once); {resume}")
        self.control.interrupt()


@contextmanager
def ctrl_c_pauses(session_id: str, control: Control) -> Iterator[CtrlC]:
    """Install the handler for the block (the main thread only, where signals arrive)."""
    handler = CtrlC(session_id, control)
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield handler
    finally:
        # Once pressed, the process is on its way out: another press, even while Python
        # shuts down, still quits at once rather than with a traceback.
        if not handler.pressed:
            signal.signal(signal.SIGINT, previous)
