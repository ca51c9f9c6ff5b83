"""The patch envelope: `*** Begin Patch`, Add/Delete/Update File sections, `@@` anchors."""

from __future__ import annotations

from codeloop.edit.apply import FileOp
from codeloop.edit.errors import PatchFormatError
from codeloop.edit.matching import Edit

_ADD, _DELETE, _UPDATE, _MOVE = "*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:"
_EOF_MARK = "*** End of File"


class _Chunk:
    def __init__(self, anchors: list[str]) -> None:
        self.anchors = anchors
        self.body: list[str] = []
        self.at_eof = False

    def edit(self) -> Edit | None:
        old = [b[1:] for b in self.body if not b.startswith("+")]
        new = [b[1:] for b in self.body if not b.startswith("-")]
        if not old and not new:
            return None
        return Edit("\n".join(old) + "\n" if old else "", "\n".join(new) + "\n" if new else "",
                    anchors=tuple(self.anchors), at_eof=self.at_eof)


def parse_envelope(patch: str) -> list[FileOp]:
    lines = patch.split("\n")
    start = next((i + 1 for i, x in enumerate(lines) if x.strip() == "*** Begin Patch"), 0)
    ops: list[FileOp] = []
    i = start
    while i < len(lines):
        line = lines[i].rstrip()
        if line == "*** End Patch":
            break
        if line.startswith(_ADD):
            path, body, i = line[len(_ADD):].strip(), [], i + 1
            while i < len(lines) and not lines[i].startswith("*** "):
                body.append(lines[i][1:] if lines[i].startswith("+") else lines[i])
                i += 1
            while body and body[-1] == "":
                body.pop()
            ops.append(FileOp(path, "create", content="\n".join(body) + "\n" if body else ""))
            continue
        if line.startswith(_DELETE):
            ops.append(FileOp(line[len(_DELETE):].strip(), "delete"))
            i += 1
            continue
        if line.startswith(_UPDATE):
            op, i = _update(lines, i)
            ops.append(op)
            continue
        if line.strip():
            raise PatchFormatError(
                f"line {i + 1} of the patch is not part of any file section: {line[:80]!r}",
                "each section starts with '*** Add File:', '*** Delete File:' or '*** Update File:'",
            )
        i += 1
    return ops


def _update(lines: list[str], i: int) -> tuple[FileOp, int]:
    path = lines[i].rstrip()[len(_UPDATE):].strip()
    i += 1
    move = None
    if i < len(lines) and lines[i].startswith(_MOVE):
        move = lines[i][len(_MOVE):].strip()
        i += 1
    chunks: list[_Chunk] = []
    pending: list[str] = []
    while i < len(lines):
        line = lines[i]
        if line.rstrip() == _EOF_MARK:
            if chunks:
                chunks[-1].at_eof = True
            i += 1
            continue
        if line.startswith("*** "):
            break
        if line.startswith("@@"):
            anchor = line[2:].strip()
            if chunks and not chunks[-1].body:
                chunks[-1].anchors.append(anchor)
            else:
                pending = [anchor] if anchor else []
                chunks.append(_Chunk(pending))
            i += 1
            continue
        if not chunks:
            chunks.append(_Chunk([]))
        chunks[-1].body.append(line if line[:1] in (" ", "-", "+") else " " + line)
        i += 1
    for chunk in chunks:
        while chunk.body and chunk.body[-1] == " ":
            chunk.body.pop()
    edits = tuple(e for e in (c.edit() for c in chunks) if e is not None)
    if not edits and move is None:
        raise PatchFormatError(f"the update of {path} has no changes")
    return FileOp(path, "update", edits, move_to=move), i
