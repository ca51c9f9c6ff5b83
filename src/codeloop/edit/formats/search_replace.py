"""SEARCH/REPLACE blocks: a path line, then <<<<<<< SEARCH / ======= / >>>>>>> REPLACE."""

from __future__ import annotations

import re

from codeloop.edit.apply import FileOp
from codeloop.edit.errors import PatchFormatError
from codeloop.edit.matching import Edit

_HEAD = re.compile(r"^<{5,9} ?SEARCH\s*$")
# Exactly seven: reStructuredText underlines ("Examples\n========") are lines of "=" too.
_DIVIDER = re.compile(r"^={7}\s*$")
_TAIL = re.compile(r"^>{5,9} ?REPLACE\s*$")


def _path_from(line: str) -> str | None:
    """A file path written on the line before a block, with markdown decoration removed."""
    text = line.strip().strip("*`#:").strip()
    text = re.sub(r"^(file|path)\s*:\s*", "", text, flags=re.I).strip("`'\" ")
    if not text or text.startswith("```") or " " in text:
        return None
    return text


def _block_text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


def parse_search_replace(patch: str, default_path: str | None = None) -> list[FileOp]:
    """Parse every block; consecutive blocks for one file become one atomic op."""
    lines = patch.split("\n")
    ops: list[FileOp] = []
    path = default_path
    i = 0
    while i < len(lines):
        if not _HEAD.match(lines[i]):
            i += 1
            continue
        j = i - 1
        while j >= 0 and (not lines[j].strip() or lines[j].strip().startswith("```")):
            j -= 1
        named = _path_from(lines[j]) if j >= 0 and not _TAIL.match(lines[j]) else None
        path = named or path
        if path is None:
            raise PatchFormatError(
                f"the SEARCH block at line {i + 1} has no file path before it",
                "put the file path alone on the line before '<<<<<<< SEARCH'",
            )
        search, replace, k = [], [], i + 1
        while k < len(lines) and not _DIVIDER.match(lines[k]):
            search.append(lines[k])
            k += 1
        if k == len(lines):
            raise PatchFormatError(f"the SEARCH block at line {i + 1} has no '=======' line")
        k += 1
        while k < len(lines) and not _TAIL.match(lines[k]):
            replace.append(lines[k])
            k += 1
        if k == len(lines):
            raise PatchFormatError(f"the SEARCH block at line {i + 1} has no '>>>>>>> REPLACE' line")
        i = k + 1
        if not any(s.strip() for s in search):
            ops.append(FileOp(path, "create", content=_block_text(replace)))
            continue
        edit = Edit(_block_text(search), _block_text(replace))
        if ops and ops[-1].path == path and ops[-1].kind == "update":
            ops[-1] = FileOp(path, "update", (*ops[-1].edits, edit))
        else:
            ops.append(FileOp(path, "update", (edit,)))
    return ops
