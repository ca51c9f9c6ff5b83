"""Turn one file's bytes into what the index stores: symbols, chunks and their search terms."""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.index.chunks import Chunk, chunk_lines
from codeloop.index.languages import detect_language
from codeloop.index.symbols import FileSymbols, extract
from codeloop.index.terms import path_terms, terms
from codeloop.index.walker import is_indexable_content


@dataclass
class Analysis:
    language: str
    indexed: bool
    lines: int = 0
    symbols: FileSymbols = field(default_factory=FileSymbols)
    chunks: list[Chunk] = field(default_factory=list)
    chunk_terms: list[list[str]] = field(default_factory=list)
    file_terms: list[str] = field(default_factory=list)


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def chunk_terms(rel: str, lines: list[str], chunk: Chunk, prefix: list[str]) -> list[str]:
    """A chunk's terms: its text, its symbol's name and its file's path."""
    body = "\n".join(lines[chunk.start_line - 1:chunk.end_line])
    return prefix + terms(chunk.symbol) + terms(body)


def analyse(rel: str, data: bytes) -> Analysis:
    language = detect_language(rel)
    if not is_indexable_content(data):
        return Analysis(language=language, indexed=False)
    text = decode(data)
    lines = text.splitlines()
    symbols = extract(data, language)
    chunks = chunk_lines(lines, symbols.definitions)
    prefix = path_terms(rel)
    per_chunk = [chunk_terms(rel, lines, c, prefix) for c in chunks]
    # Definition names count twice at file level: a file that defines a name is about it.
    file_level = prefix * 2 + [t for d in symbols.definitions for t in terms(d.name)]
    for toks in per_chunk:
        file_level.extend(toks[len(prefix):])
    return Analysis(language, True, len(lines), symbols, chunks, per_chunk, file_level)
