"""How a person steers a running session: stop, pause, and a Ctrl-C that never cuts a write."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Control:
    """How a person steers a running session from another thread (CLI signal, server)."""

    stop: threading.Event = field(default_factory=threading.Event)
    pause: threading.Event = field(default_factory=threading.Event)
    # Sections a Ctrl-C must not cut (a log append, a file write); an interrupt that comes
    # during one takes effect at its end.
    _critical: int = field(default=0, init=False, repr=False)
    _deferred: bool = field(default=False, init=False, repr=False)
    # Set by a runner whose session runs in another process (a Ray worker): hands a request
    # ("stop", "pause") to it and returns once it arrived, so the caller's answer is true.
    forward: Callable[[str], None] | None = field(default=None, repr=False)

    def request_stop(self) -> None:
        """Stop at the next step boundary, wherever the session runs."""
        self.stop.set()
        self._forward("stop")

    def request_pause(self) -> None:
        """Pause at the next step boundary, wherever the session runs."""
        self.pause.set()
        self._forward("pause")

    def _forward(self, name: str) -> None:
        forward = self.forward
        if forward is not None:
            forward(name)

    @contextmanager
    def critical(self) -> Iterator[None]:
        """A section an interrupt waits for (sections nest)."""
        self._critical += 1
        try:
            yield
        finally:
            self._critical -= 1
        if self._deferred and not self._critical:
            self._deferred = False
            raise KeyboardInterrupt

    def interrupt(self) -> None:
        """From a SIGINT handler (main thread): pause, cutting what runs unless it is critical."""
        self.pause.set()
        if self._critical:
            self._deferred = True
            return
        raise KeyboardInterrupt
