"""Bounded capture of a command's output: the head and the tail, never the whole stream."""

from __future__ import annotations

from collections import deque


class HeadTail:
    """Keep the first and last `limit // 2` bytes of a stream of any length."""

    def __init__(self, limit: int) -> None:
        self._half = max(limit // 2, 1)
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        while self._tail and self._tail_len - len(self._tail[0]) >= self._half:
            self._tail_len -= len(self._tail.popleft())

    def render(self) -> tuple[str, bool]:
        """The text to show and whether anything was cut (same layout as `cap_output`)."""
        tail = b"".join(self._tail)[-self._half :] if self._tail else b""
        kept = len(self._head) + len(tail)
        if kept >= self.total:
            return (bytes(self._head) + tail).decode("utf-8", "replace"), False
        cut = self.total - kept
        head_text = bytes(self._head).decode("utf-8", "replace")
        tail_text = tail.decode("utf-8", "replace")
        return f"{head_text}\n[... {cut} bytes of output omitted ...]\n{tail_text}", True
