"""Git-style unified diffs of one file's before and after bytes."""

from __future__ import annotations

import difflib


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def file_diff(rel: str, before: bytes | None, after: bytes | None, context: int = 3) -> str:
    """A `diff --git` section for one file; `None` means the file does not exist on that side."""
    if before == after:
        return ""
    header = [f"diff --git a/{rel} b/{rel}"]
    if before is None:
        header.append("new file mode 100644")
    elif after is None:
        header.append("deleted file mode 100644")
    a_name = f"a/{rel}" if before is not None else "/dev/null"
    b_name = f"b/{rel}" if after is not None else "/dev/null"
    if is_binary(before or b"") or is_binary(after or b""):
        header.append(f"Binary files {a_name} and {b_name} differ")
        return "\n".join(header) + "\n"
    old = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    body = []
    for line in difflib.unified_diff(old, new, a_name, b_name, n=context):
        body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "\n".join(header) + "\n" + "".join(body)
