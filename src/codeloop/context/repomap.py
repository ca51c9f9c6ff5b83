"""The repo map: the most relevant signatures of the repository within a token budget."""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.context.tokens import TokenCounter, get_counter
from codeloop.index.focus import Focus, focus_of
from codeloop.index.hits import SymbolHit
from codeloop.index.rank import rank_files
from codeloop.index.service import RepoIndex

MAX_DEFS_PER_FILE = 40
_KIND_ORDER = {"class": 0, "interface": 0, "type": 1, "function": 1, "method": 2}


@dataclass
class RepoMap:
    text: str
    tokens: int
    files: list[str] = field(default_factory=list)
    # (path, start_line) of every definition the map shows
    shown: set[tuple[str, int]] = field(default_factory=set)


def _def_order(hit: SymbolHit, focus: Focus) -> tuple[int, int, int]:
    mentioned = 0 if hit.name in focus.identifiers else 1
    return (mentioned, _KIND_ORDER.get(hit.kind, 3), hit.start_line)


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
    defs_by_file = index.definitions_in([p for p, _ in ranked])
    for path, _score in ranked:
        defs = defs_by_file.get(path, [])  # in line order
        if len(defs) > MAX_DEFS_PER_FILE:
            # Only a file with more definitions than fit needs choosing (most do not).
            defs = sorted(defs, key=lambda h: _def_order(h, focus))[:MAX_DEFS_PER_FILE]
            defs.sort(key=lambda h: h.start_line)
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
