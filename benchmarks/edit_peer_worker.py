"""Runs inside a peer's virtual environment: apply search/replace pairs with the peer's editor.

Reads {"peer", "files": {id: text}, "cases": [[file_id, search, replace], ...]} as JSON on
stdin; writes one JSON list of [status, sha256-of-result-or-null, ms] per case on stdout.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import tempfile
import time
from pathlib import Path


def _aider():
    from aider.coders import editblock_coder

    fence = getattr(editblock_coder, "DEFAULT_FENCE", ("```", "```"))

    def apply(path: Path, text: str, search: str, replace: str) -> str | None:
        return editblock_coder.do_replace(str(path), text, search, replace, fence)

    return apply


def _openhands():
    from openhands_aci.editor import OHEditor

    def apply(path: Path, text: str, search: str, replace: str) -> str | None:
        path.write_text(text)
        editor = OHEditor(workspace_root=str(path.parent))
        try:
            editor(command="str_replace", path=str(path), old_str=search, new_str=replace)
        except Exception:
            return None
        return path.read_text()

    return apply


def main() -> None:
    logging.disable(logging.CRITICAL)  # the peers log every call at DEBUG; that is not their speed
    job = json.load(sys.stdin)
    apply = {"aider": _aider, "openhands": _openhands}[job["peer"]]()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "target.py"
        for file_id, search, replace in job["cases"]:
            text = job["files"][file_id]
            path.write_text(text)
            start = time.perf_counter()
            try:
                result = apply(path, text, search, replace)
            except Exception:
                result = None
            ms = (time.perf_counter() - start) * 1000
            if result is None:
                out.append(["refused", None, ms])
            else:
                out.append(["applied", hashlib.sha256(result.encode()).hexdigest(), ms])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
