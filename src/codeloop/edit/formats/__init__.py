"""Parsers that turn model-written patches into file operations, and format detection."""

from __future__ import annotations

import re

from codeloop.edit.apply import FileOp
from codeloop.edit.errors import PatchFormatError
from codeloop.edit.formats.envelope import parse_envelope
from codeloop.edit.formats.search_replace import parse_search_replace
from codeloop.edit.formats.unified import parse_unified

_ENVELOPE = re.compile(r"^\*\*\* (Begin Patch|Update File:|Add File:|Delete File:)", re.M)
_SEARCH = re.compile(r"^<{5,9} ?SEARCH\s*$", re.M)
_DIFF = re.compile(r"^(@@|--- \S|\+\+\+ \S|diff --git )", re.M)


def detect(patch: str) -> str:
    """Which format `patch` is in: "envelope", "search_replace" or "unified"."""
    # Substring tests first: a multi-line regex scan of a long diff costs milliseconds.
    if "*** " in patch and _ENVELOPE.search(patch):
        return "envelope"
    if "SEARCH" in patch and _SEARCH.search(patch):
        return "search_replace"
    if patch.startswith(("@@", "--- ", "+++ ", "diff --git ")) or "\n@@" in patch or _DIFF.search(patch):
        return "unified"
    raise PatchFormatError(
        "the patch is not in a format I recognise",
        "send SEARCH/REPLACE blocks, a unified diff, or a '*** Begin Patch' envelope",
    )


def parse_patch(patch: str, default_path: str | None = None) -> list[FileOp]:
    """Parse a patch in any accepted format into file operations."""
    patch = patch.replace("\r\n", "\n")
    kind = detect(patch)
    if kind == "envelope":
        return parse_envelope(patch)
    if kind == "search_replace":
        return parse_search_replace(patch, default_path)
    return parse_unified(patch, default_path)


__all__ = ["detect", "parse_envelope", "parse_patch", "parse_search_replace", "parse_unified"]
