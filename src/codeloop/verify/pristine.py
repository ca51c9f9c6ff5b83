"""Put the edited files' original contents back for one command, then the edits again.

Used to learn how tests the baseline never ran behaved before the edits. The edits are
stashed on disk first, so a crash mid-run loses nothing: the next verifier puts them back.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from codeloop.verify.commands import SCRATCH_DIR

STASH = f"{SCRATCH_DIR}/stash.json"

Originals = Callable[[str], "bytes | None"]


def _put(path: Path, data: bytes | None) -> None:
    """Replace (never write through: the file may be a hard link elsewhere) or remove."""
    if data is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.codeloop-verify")
    tmp.write_bytes(data)
    if path.exists():
        with contextlib.suppress(OSError):
            os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


def recover(root: Path) -> list[str]:
    """Put back edits stashed by a run that never finished; returns the restored paths."""
    stash = root / STASH
    if not stash.exists():
        return []
    saved: dict[str, str | None] = json.loads(stash.read_text())
    for rel, data in saved.items():
        _put(root / rel, None if data is None else base64.b64decode(data))
    stash.unlink()
    with contextlib.suppress(OSError):
        stash.parent.rmdir()
    return sorted(saved)


@contextlib.contextmanager
def original_tree(root: Path, changed: list[str], originals: Originals) -> Iterator[None]:
    """Within the block, `changed` files hold what `originals` says (None: absent)."""
    files = [rel for rel in changed if not (root / rel).is_symlink()]
    saved = {rel: (root / rel).read_bytes() if (root / rel).is_file() else None for rel in files}
    stash = root / STASH
    stash.parent.mkdir(exist_ok=True)
    stash.write_text(json.dumps({r: None if d is None else base64.b64encode(d).decode() for r, d in saved.items()}))
    try:
        for rel in files:
            _put(root / rel, originals(rel))
        yield
    finally:
        recover(root)
