"""The repo map: the most relevant signatures of the repository within a token budget."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from codeloop.context.tokens import TokenCounter, get_counter
from codeloop.index.focus import Focus, focus_of
from codeloop.index.hits import SymbolHit
from codeloop.index.rank import rank_files
from codeloop.index.service import RepoIndex

MAX_DEFS_PER_FILE = 40
_DEFS_BATCH = 20
_KIND_ORDER = {"class": 0, "interface": 0, "type": 1, "function": 1, "method": 2}


@dataclass
class RepoMap:
    text: str
    tokens: int
    files: list[str] = field(default_factory=list)
    # (path, start_line) of every definition the map shows
    shown: set[tuple[str, int]] = field(default_factory=set)


def _choose(index: RepoIndex, path: str, defs: list[SymbolHit], focus: Focus
            ) -> list[SymbolHit]:
    """The `MAX_DEFS_PER_FILE` definitions a large file shows, in line order: those the focus
    names first, then classes, functions and methods by kind and line."""
    # By kind and line, once per file version (the lists are the index's, replaced on edit):
    # sorting a thousand definitions per file for every map was most of the map's time.
    orders = index.memo("map_def_order", dict[str, tuple[list[SymbolHit], list[SymbolHit]]])
    known = orders.get(path)
    if known is None or known[0] is not defs:
        known = (defs, sorted(defs, key=lambda h: (_KIND_ORDER.get(h.kind, 3), h.start_line)))
        orders[path] = known
    names = focus.identifiers
    chosen = [h for h in known[1] if h.name in names][:MAX_DEFS_PER_FILE]
    if len(chosen) < MAX_DEFS_PER_FILE:
        rest = (h for h in known[1] if h.name not in names)
        chosen += itertools.islice(rest, MAX_DEFS_PER_FILE - len(chosen))
    return sorted(chosen, key=lambda h: h.start_line)


def _indent(hit: SymbolHit) -> str:
    return "    " if hit.parent else ""


def build_repo_map(index: RepoIndex, focus_text: str, budget_tokens: int,
                   counter: TokenCounter | None = None,
                   ranked: list[tuple[str, float]] | None = None,
                   focus: Focus | None = None) -> RepoMap:
    """Files ranked for `focus_text`, each with its key definitions (line: signature)."""
    counter = counter or get_counter()
    focus = focus if focus is not None else focus_of(index, focus_text)
    if ranked is None:
        ranked = rank_files(index, focus_text, limit=200, focus=focus)
    header = "Repository map (most relevant files first; `line│ signature`):"
    used = counter.count(header)
    lines = [header]
    result = RepoMap("", 0)
    paths = [p for p, _ in ranked]
    defs_by_file: dict[str, list[SymbolHit]] = {}
    for i, path in enumerate(paths):
        if path not in defs_by_file:
            # A batch at a time: the budget ends the map long before 200 files, and a
            # repository's first map would otherwise load every listed file's definitions.
            defs_by_file.update(index.definitions_in(paths[i:i + _DEFS_BATCH]))
        defs = defs_by_file.get(path, [])  # in line order
        if len(defs) > MAX_DEFS_PER_FILE:
            # Only a file with more definitions than fit needs choosing (most do not).
            defs = _choose(index, path, defs, focus)
        chosen = defs
        title = f"{path}:"
        block = [f"{hit.start_line:>6}│ {_indent(hit)}{hit.signature}" for hit in chosen]
        # One count per file; line by line only for the file that reaches the budget.
        cost = counter.count("\n".join([title, *block])) + 1
        if used + cost <= budget_tokens:
            lines += [title, *block]
            used += cost
            result.files.append(path)
            result.shown.update((path, hit.start_line) for hit in chosen)
            continue
        cost = counter.count(title) + 1
        if used + cost > budget_tokens:
            break
        lines.append(title)
        used += cost
        result.files.append(path)
        for hit, line in zip(chosen, block, strict=True):
            cost = counter.count(line) + 1
            if used + cost > budget_tokens:
                break
            lines.append(line)
            used += cost
            result.shown.add((path, hit.start_line))
        break
    result.text = "\n".join(lines)
    # The sum of the parts' counts (one token per line break): a joined text never costs
    # more, and a second count of the whole map would double the counting time.
    result.tokens = used
    return result
