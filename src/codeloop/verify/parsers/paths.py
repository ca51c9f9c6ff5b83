"""Path helpers shared by the parsers."""

from __future__ import annotations

import os
from pathlib import Path


def relative(path: str, root: Path) -> str:
    """`path` relative to `root` in POSIX form when it lies inside; otherwise as given."""
    cleaned = path.strip()
    if cleaned.startswith("./"):
        cleaned = cleaned[2:]
    candidate = Path(cleaned)
    if candidate.is_absolute():
        for base in {str(root), os.path.realpath(root)}:
            try:
                return candidate.relative_to(base).as_posix()
            except ValueError:
                continue
        return cleaned
    return candidate.as_posix()


def short_trace(text: str, max_lines: int = 25, max_chars: int = 2000) -> str:
    """The tail of a trace: the end is where the cause is."""
    lines = text.strip("\n").splitlines()
    if len(lines) > max_lines:
        lines = ["...", *lines[-max_lines:]]
    out = "\n".join(lines)
    return out if len(out) <= max_chars else "..." + out[-max_chars:]
