"""A lenient unified-diff parser for diffs as models write them.

Hand-written because strict parsers drop what models produce: bare `@@` headers, wrong
line counts, hunks with no header, missing `---`/`+++` lines, blank context lines that
lost their leading space. Line numbers become hints, section headings become anchors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codeloop.edit.apply import FileOp
from codeloop.edit.errors import PatchFormatError
from codeloop.edit.matching import Edit

_HUNK = re.compile(r"^@@+\s*(?:-(\d+)(?:,(\d+))?)?\s*(?:\+(\d+)(?:,(\d+))?)?\s*(?:@@+)?\s?(.*)$")


@dataclass
class _Hunk:
    old_start: int | None
    old_count: int | None
    new_count: int | None
    section: str
    body: list[str] = field(default_factory=list)

    def finish(self) -> None:
        """Drop bare empty lines at the end beyond what the header's counts allow."""
        while self.body and self.body[-1] == "":
            olds = sum(1 for b in self.body if not b.startswith("+"))
            news = sum(1 for b in self.body if not b.startswith("-"))
            if self.old_count is not None and olds <= self.old_count and news <= (self.new_count or 0):
                break
            self.body.pop()


@dataclass
class _File:
    old: str | None = None
    new: str | None = None
    git_path: str | None = None
    hunks: list[_Hunk] = field(default_factory=list)


def _clean(name: str) -> str | None:
    name = name.split("\t")[0].strip().strip('"')
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_unified(patch: str, default_path: str | None = None) -> list[FileOp]:
    files: list[_File] = []
    hunk: _Hunk | None = None

    def current() -> _File:
        if not files:
            files.append(_File())
        return files[-1]

    def close() -> None:
        nonlocal hunk
        if hunk is not None:
            hunk.finish()
            hunk = None

    lines = patch.split("\n")
    last = len(lines) - 1
    for n, line in enumerate(lines):
        # Hot path: a body line of the current hunk ("--- " before "+++ " starts a new file).
        if hunk is not None and line and line[0] in " +-" and not (
            line.startswith("--- ") and n < last and lines[n + 1].startswith("+++ ")
        ):
            hunk.body.append(line)
            continue
        if line.startswith("diff --git "):
            close()
            m = re.match(r"diff --git (\S+) (\S+)", line)
            files.append(_File(git_path=_clean(m.group(2)) if m else None))
            continue
        next_line = lines[n + 1] if n + 1 < len(lines) else ""
        # Inside a hunk "--- x" may be a deleted "-- x" line: a header only before "+++".
        if line.startswith("--- ") and (hunk is None or next_line.startswith("+++ ")):
            close()
            if current().hunks or current().old is not None:
                files.append(_File())
            files[-1].old = _clean(line[4:]) or "/dev/null"
            continue
        if line.startswith("+++ ") and hunk is None:
            close()
            if current().hunks:
                files.append(_File())
            files[-1].new = _clean(line[4:]) or "/dev/null"
            continue
        m = _HUNK.match(line) if line.startswith("@@") else None
        if m:
            close()
            hunk = _Hunk(
                int(m.group(1)) if m.group(1) else None,
                int(m.group(2)) if m.group(2) else (1 if m.group(1) else None),
                int(m.group(4)) if m.group(4) else (1 if m.group(3) else None),
                m.group(5).strip(),
            )
            current().hunks.append(hunk)
            continue
        if line.startswith("rename to ") and files:
            files[-1].new = line[len("rename to "):].strip()
            continue
        if line.startswith("rename from ") and files:
            files[-1].old = line[len("rename from "):].strip()
            continue
        if hunk is None and line[:1] in (" ", "-", "+") and files and (files[-1].old or files[-1].new):
            hunk = _Hunk(None, None, None, "")
            files[-1].hunks.append(hunk)
        if hunk is not None:
            if line[:1] in (" ", "-", "+") or line == "":
                hunk.body.append(line)
                continue
            if line.startswith("\\"):
                continue
            close()
    close()
    return [op for f in files for op in _ops(f, default_path)]


def _ops(f: _File, default_path: str | None) -> list[FileOp]:
    if not f.hunks and f.old is None and f.new is None:
        return []
    old = None if f.old == "/dev/null" else f.old
    new = None if f.new == "/dev/null" else f.new
    path = new or old or f.git_path or default_path
    if path is None:
        raise PatchFormatError(
            "a diff hunk does not say which file it changes",
            "start the diff with '--- a/PATH' and '+++ b/PATH' lines",
        )
    if f.new == "/dev/null":
        return [FileOp(old or path, "delete")]
    if f.old == "/dev/null":
        added = [b[1:] for h in f.hunks for b in h.body if b.startswith("+")]
        return [FileOp(path, "create", content="\n".join(added) + "\n" if added else "")]
    edits = []
    for h in f.hunks:
        old_lines = [b[1:] for b in h.body if not b.startswith("+")]
        new_lines = [b[1:] for b in h.body if not b.startswith("-")]
        if not old_lines and not new_lines:
            continue
        edits.append(Edit(
            "\n".join(old_lines) + "\n" if old_lines else "",
            "\n".join(new_lines) + "\n" if new_lines else "",
            hint_line=h.old_start or None,
            anchors=(h.section,) if h.section else (),
        ))
    move = new if old and new and old != new else None
    return [FileOp(old or path, "update", tuple(edits), move_to=move)]
