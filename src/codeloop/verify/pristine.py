"""Put the edited files' original contents back for one command, then the edits again.

Used to learn how tests the baseline never ran behaved before the edits. The edits are
stashed on disk first, so a crash mid-run loses nothing: the next verifier puts them back.
Every read and write goes through `SafeRoot`: a file is replaced atomically, never written
through a link or a hard link, and a path reached through a link is left alone.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from codeloop.verify.commands import SCRATCH_DIR
from codeloop.verify.scratch import prepare, tidy
from codeloop.workspace.errors import UnsafePath
from codeloop.workspace.hostfs import SafeRoot

STASH = f"{SCRATCH_DIR}/stash.json"

Originals = Callable[[str], "bytes | None"]


def _put(tree: SafeRoot, rel: str, data: bytes | None) -> None:
    """Replace `rel` by `data`, or remove it (None). A path that leads through a link is
    skipped: the run sees the edit there rather than anything outside being touched."""
    with contextlib.suppress(UnsafePath):
        if data is not None:
            tree.write_bytes(rel, data)
        elif not tree.is_dir(rel):  # a directory the session made there is not ours to drop
            tree.remove(rel)


def recover(root: Path) -> list[str]:
    """Put back edits stashed by a run that never finished; returns the restored paths."""
    tree = SafeRoot(root)
    raw = tree.read_if_file(STASH)
    if raw is None:
        return []
    saved: dict[str, str | None] = json.loads(raw)
    for rel, data in saved.items():
        _put(tree, rel, None if data is None else base64.b64decode(data))
    tree.remove(STASH)
    tidy(tree)
    return sorted(saved)


@contextlib.contextmanager
def original_tree(root: Path, changed: list[str], originals: Originals) -> Iterator[None]:
    """Within the block, `changed` files hold what `originals` says (None: absent)."""
    tree = SafeRoot(root)
    files = [rel for rel in changed if not tree.is_symlink(rel)]
    saved = {rel: tree.read_if_file(rel) for rel in files}
    prepare(tree)
    tree.write_text(STASH, json.dumps({r: None if d is None else base64.b64encode(d).decode()
                                       for r, d in saved.items()}))
    try:
        for rel in files:
            _put(tree, rel, originals(rel))
        yield
    finally:
        recover(root)
