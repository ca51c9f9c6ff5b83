"""Path helpers shared by the parsers."""

from __future__ import annotations

import functools
import os
from pathlib import Path


def relative(path: str, root: Path) -> str:
    """`path` relative to `root` in POSIX form when it lies inside; otherwise as given."""
    return _relative(path, str(root))


# Reports name the same few files thousands of times; string work, not pathlib, keeps a
# 5,000-case report under 100 ms.
@functools.lru_cache(maxsize=4096)
def _relative(path: str, root: str) -> str:
    cleaned = path.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned.startswith("/"):
        return cleaned
    for base in (root, _realpath(root)):
        prefix = base.rstrip("/") + "/"
        if cleaned.startswith(prefix):
            return cleaned[len(prefix) :]
    return cleaned


@functools.lru_cache(maxsize=64)
def _realpath(root: str) -> str:
    return os.path.realpath(root)


def short_trace(text: str, max_lines: int = 25, max_chars: int = 2000) -> str:
    """The tail of a trace: the end is where the cause is."""
    lines = text.strip("\n").splitlines()
    if len(lines) > max_lines:
        lines = ["...", *lines[-max_lines:]]
    out = "\n".join(lines)
    return out if len(out) <= max_chars else "..." + out[-max_chars:]
