"""Git-style unified diffs of one file's before and after bytes."""

from __future__ import annotations

import difflib
import re

REGULAR = 0o100644
EXECUTABLE = 0o100755
SYMLINK = 0o120000


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def quote_path(name: str) -> str:
    """A name for a diff header, C-quoted as git does when it holds a control character:
    a newline in a file name must not start a forged line of the diff."""
    if not _CONTROL.search(name):
        return name
    return '"' + re.sub(r'[\x00-\x1f\x7f"\\]',
                        lambda m: _C_ESCAPES.get(m.group(), f"\\{ord(m.group()):03o}"), name) + '"'


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def file_diff(rel: str, before: bytes | None, after: bytes | None, context: int = 3, *,
              old_mode: int = REGULAR, new_mode: int = REGULAR,
              old_rel: str | None = None) -> str:
    """A `diff --git` section for one file; `None` means the file does not exist on that side.

    Modes are git modes (100644, 100755, 120000); `old_rel` names the source of a rename.
    """
    old_rel = old_rel or rel
    if before == after and old_mode == new_mode and old_rel == rel:
        return ""
    header = [f"diff --git {quote_path('a/' + old_rel)} {quote_path('b/' + rel)}"]
    if before is None:
        header.append(f"new file mode {new_mode:o}")
    elif after is None:
        header.append(f"deleted file mode {old_mode:o}")
    else:
        if old_mode != new_mode:
            header += [f"old mode {old_mode:o}", f"new mode {new_mode:o}"]
        if old_rel != rel:
            similarity = 100 if before == after else _similarity(before, after)
            header += [f"similarity index {similarity}%", f"rename from {quote_path(old_rel)}",
                       f"rename to {quote_path(rel)}"]
    if before == after:
        return "\n".join(header) + "\n"
    a_name = quote_path(f"a/{old_rel}") if before is not None else "/dev/null"
    b_name = quote_path(f"b/{rel}") if after is not None else "/dev/null"
    if is_binary(before or b"") or is_binary(after or b""):
        header.append(f"Binary files {a_name} and {b_name} differ")
        return "\n".join(header) + "\n"
    old = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    body = []
    for line in difflib.unified_diff(old, new, a_name, b_name, n=context):
        body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "\n".join(header) + "\n" + "".join(body)


def _similarity(before: bytes, after: bytes) -> int:
    return int(100 * difflib.SequenceMatcher(None, before, after, autojunk=False).quick_ratio())
