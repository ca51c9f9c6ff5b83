"""Cut a file into search chunks along its definitions, so a hit is a function, not a page."""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.index.symbols import Definition

MAX_CHUNK_LINES = 80
WINDOW_LINES = 60
SMALL_LINES = 4
MERGED_LINES = 30


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int
    symbol: str = ""  # dotted name of the definition it belongs to, "" for module-level code


@dataclass
class _Node:
    definition: Definition
    qualified: str
    children: list[_Node] = field(default_factory=list)


def _tree(definitions: list[Definition]) -> list[_Node]:
    ordered = sorted(definitions, key=lambda d: (d.start_line, -d.end_line))
    roots: list[_Node] = []
    stack: list[_Node] = []
    for d in ordered:
        while stack and stack[-1].definition.end_line < d.start_line:
            stack.pop()
        parent = stack[-1] if stack and stack[-1].definition.end_line >= d.end_line else None
        node = _Node(d, f"{parent.qualified}.{d.name}" if parent else d.name)
        (parent.children if parent else roots).append(node)
        stack.append(node)
    return roots


def _windows(start: int, end: int, symbol: str, out: list[Chunk]) -> None:
    for s in range(start, end + 1, WINDOW_LINES):
        out.append(Chunk(s, min(end, s + WINDOW_LINES - 1), symbol))


def _cover(start: int, end: int, nodes: list[_Node], symbol: str, out: list[Chunk]) -> None:
    pos = start
    for node in nodes:
        d = node.definition
        if d.start_line < pos or d.end_line > end:
            continue  # overlapping captures (e.g. a decorator line); the outer chunk covers it
        if d.start_line > pos:
            _windows(pos, d.start_line - 1, symbol, out)
        if d.end_line - d.start_line + 1 > MAX_CHUNK_LINES and node.children:
            _cover(d.start_line, d.end_line, node.children, node.qualified, out)
        else:
            _windows(d.start_line, d.end_line, node.qualified, out)
        pos = d.end_line + 1
    if pos <= end:
        _windows(pos, end, symbol, out)


def _tiny(c: Chunk) -> bool:
    return c.end_line == c.start_line or (c.symbol == "" and c.end_line - c.start_line < SMALL_LINES)


def _merge_small(chunks: list[Chunk]) -> list[Chunk]:
    """Runs of tiny neighbouring chunks (constants, one-line definitions, stray statements)
    become one chunk: BM25 would otherwise rank a lone `X = 1` above the code that uses it."""
    out: list[Chunk] = []
    for i, c in enumerate(chunks):
        prev = out[-1] if out else None
        following = chunks[i + 1].symbol if i + 1 < len(chunks) else ""
        is_header = bool(c.symbol) and following.startswith(c.symbol + ".")
        parent = c.symbol.rpartition(".")[0]
        if (prev is not None and not is_header and _tiny(c)
                and (prev.symbol == parent or _tiny(prev))
                and prev.symbol.rpartition(".")[0] in (parent, prev.symbol)
                and c.end_line - prev.start_line < MERGED_LINES):
            out[-1] = Chunk(prev.start_line, c.end_line, parent)
        else:
            out.append(c)
    return out


def chunk_lines(lines: list[str], definitions: list[Definition]) -> list[Chunk]:
    """Chunks covering every non-blank line once: definitions whole when small, else split."""
    raw: list[Chunk] = []
    _cover(1, len(lines), _tree(definitions), "", raw)
    kept = [c for c in raw if any(lines[i].strip() for i in range(c.start_line - 1, c.end_line))]
    return _merge_small(kept)
