"""Definitions, references and imports of one source file, from tree-sitter."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import tree_sitter as ts

from codeloop.index.languages import grammar, has_grammar

_SIGNATURE_MAX = 200
_SPACE = re.compile(r"\s+")
# Node kinds whose definitions hold other definitions, for `parent` and the method kind.
_CONTAINER_KINDS = {"class", "interface", "module", "impl", "trait", "struct", "enum", "type"}


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str
    parent: str | None = None


@dataclass(frozen=True)
class Reference:
    name: str
    line: int
    kind: str = "call"


@dataclass
class FileSymbols:
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)


def _signature(node: ts.Node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None and body.start_byte > node.start_byte else None
    if end is None:
        newline = source.find(b"\n", node.start_byte, node.end_byte)
        end = newline if newline != -1 else node.end_byte
    text = source[node.start_byte:end].decode("utf-8", "replace")
    text = _SPACE.sub(" ", text).strip().rstrip("{").rstrip()
    return text if len(text) <= _SIGNATURE_MAX else text[: _SIGNATURE_MAX - 1] + "…"


def _import_text(node: ts.Node) -> str:
    text = (node.text or b"").decode("utf-8", "replace")
    return _SPACE.sub("", text).strip("\"'`")


def extract(source: bytes, language: str) -> FileSymbols:
    """Parse `source` and return its symbols; an empty result for languages without a grammar."""
    if not has_grammar(language):
        return FileSymbols()
    g = grammar(language)
    tree = ts.Parser(g.language).parse(source)
    root = tree.root_node
    result = FileSymbols()
    raw_defs: list[tuple[ts.Node, str, str]] = []
    seen_defs: set[tuple[int, int]] = set()
    seen_refs: set[tuple[str, int]] = set()
    for _pattern, captures in ts.QueryCursor(g.tags).matches(root):
        names = captures.get("name")
        if not names:
            continue
        name = (names[0].text or b"").decode("utf-8", "replace")
        for capture, nodes in captures.items():
            if capture.startswith("definition."):
                node = nodes[0]
                key = (node.start_byte, node.end_byte)
                if key not in seen_defs:
                    seen_defs.add(key)
                    raw_defs.append((node, name, capture.removeprefix("definition.")))
            elif capture.startswith("reference."):
                line = names[0].start_point.row + 1
                if (name, line) not in seen_refs:
                    seen_refs.add((name, line))
                    result.references.append(
                        Reference(name, line, capture.removeprefix("reference."))
                    )
    result.definitions = _with_parents(raw_defs, source)
    if g.imports is not None:
        for _pattern, captures in ts.QueryCursor(g.imports).matches(root):
            for node in captures.get("import", []):
                text = _import_text(node)
                if text and text not in result.imports:
                    result.imports.append(text)
    return result


def _with_parents(raw: list[tuple[ts.Node, str, str]], source: bytes) -> list[Definition]:
    """Attach each definition to the innermost container definition that encloses it."""
    raw.sort(key=lambda item: (item[0].start_byte, -item[0].end_byte))
    stack: list[tuple[int, str, str]] = []  # (end_byte, name, kind)
    out: list[Definition] = []
    for node, name, kind in raw:
        while stack and stack[-1][0] <= node.start_byte:
            stack.pop()
        parent = next((n for end, n, k in reversed(stack) if k in _CONTAINER_KINDS), None)
        if kind == "function" and parent is not None:
            kind = "method"
        out.append(Definition(
            name=name, kind=kind,
            start_line=node.start_point.row + 1, end_line=node.end_point.row + 1,
            signature=_signature(node, source), parent=parent,
        ))
        stack.append((node.end_byte, name, kind))
    return out
