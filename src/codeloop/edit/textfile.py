"""Decode a file's bytes to text for editing and encode it back exactly as it was stored.

The text the engine sees always uses "\n"; the original encoding, byte-order mark and line
ending style are remembered so an edit changes only the lines it meant to change.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.edit.errors import NotTextFile

MAX_BYTES = 2_000_000

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# Tried in order for files without a BOM; cp1252 decodes most legacy Windows files and
# round-trips their bytes, latin-1 accepts anything that is left.
_FALLBACKS = ("utf-8", "cp1252", "latin-1")


@dataclass(frozen=True)
class TextFile:
    """A decoded file: `text` uses "\n" line endings; the rest says how to write it back."""

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"


def decode(data: bytes, path: str = "file", max_bytes: int = MAX_BYTES) -> TextFile:
    """Decode `data`; raise NotTextFile for binary or over-size content."""
    if len(data) > max_bytes:
        raise NotTextFile(
            f"{path} is {len(data):,} bytes, over the {max_bytes:,}-byte limit for editing",
            "edit a smaller file, or rewrite it with a command in the sandbox",
        )
    bom, encoding = b"", ""
    for mark, name in _BOMS:
        if data.startswith(mark):
            bom, encoding = mark, name
            break
    body = data[len(bom):]
    if not encoding:
        if b"\x00" in body[:8192]:
            raise NotTextFile(
                f"{path} is a binary file", "binary files cannot be edited as text"
            )
        for name in _FALLBACKS:
            try:
                text = body.decode(name)
            except UnicodeDecodeError:
                continue
            encoding = name
            break
    else:
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            raise NotTextFile(f"{path} has a {encoding} byte-order mark but does not decode: {exc}") from exc
    crlf = text.count("\r\n")
    newline = "\n"
    # Only a file that uses CRLF throughout is normalised; a mixed file keeps its bytes.
    if crlf and crlf == text.count("\n"):
        text = text.replace("\r\n", "\n")
        newline = "\r\n"
    return TextFile(text=text, encoding=encoding, bom=bom, newline=newline)


def encode(text: str, like: TextFile, path: str = "file") -> bytes:
    """Encode `text` the way `like` was stored (encoding, BOM, line endings)."""
    if like.newline != "\n":
        text = text.replace("\n", like.newline)
    try:
        body = text.encode(like.encoding)
    except UnicodeEncodeError as exc:
        bad = text[exc.start:exc.end]
        raise NotTextFile(
            f"{path} is stored as {like.encoding}, which cannot hold {bad!r}",
            f"use only characters {like.encoding} can represent, or an escape sequence",
        ) from exc
    return like.bom + body


def normalize_newlines(text: str) -> str:
    """Model-supplied text with CRLF or CR line endings, as "\n" text."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
