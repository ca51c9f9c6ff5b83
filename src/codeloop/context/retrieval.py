"""The code context for a task: a repo map plus the most relevant code, within a budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from codeloop.context.repomap import RepoMap, build_repo_map
from codeloop.context.tokens import TokenCounter, get_counter
from codeloop.index.focus import focus_of, without_reports
from codeloop.index.rank import LEXICAL_DEPTH, fuse_semantic, rank_files, semantic_files
from codeloop.index.service import RepoIndex

MAP_SHARE = 0.25
MAX_SNIPPET_LINES = 120
_SEARCH_DEPTH = 60
_TOP_FILES = 15
# Numbered code lines cost at least this many tokens (the number and the bar alone).
_MIN_TOKENS_PER_LINE = 3


@dataclass(frozen=True)
class Snippet:
    path: str
    start_line: int
    end_line: int
    text: str


@dataclass
class Seen:
    """What the conversation already shows: files outlined, and line spans of files (a
    whole file read is the span 1 to `WHOLE`). A context built with it repeats neither."""

    outlined: set[str] = field(default_factory=set)
    spans: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def covers(self, path: str, start: int, end: int) -> bool:
        return any(s <= start and end <= e for s, e in self.spans.get(path, ()))

    def add_span(self, path: str, start: int, end: int) -> None:
        self.spans.setdefault(path, []).append((start, end))


WHOLE = 1 << 30


@dataclass
class TaskContext:
    text: str
    tokens: int
    repo_map: RepoMap
    snippets: list[Snippet] = field(default_factory=list)
    ranked_files: list[tuple[str, float]] = field(default_factory=list)
    semantic: bool = False  # the ranking fused embeddings (asked for, and the vectors ready)


def number_lines(lines: Sequence[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}│ {line}" for i, line in enumerate(lines))


def build_task_context(index: RepoIndex, task: str, budget_tokens: int = 20_000,
                       counter: TokenCounter | None = None,
                       map_share: float = MAP_SHARE, seen: Seen | None = None,
                       semantic: bool = False, titled: bool = True) -> TaskContext:
    """Repo map (a `map_share` of the budget) then code for `task`, never over the budget;
    nothing `seen` already shows, and the ranking fused with embeddings if `semantic` and
    they are ready (`rank.semantic_files`; `titled`: see `rank.signals`)."""
    with index.reading():
        return _build(index, task, budget_tokens, counter or get_counter(), map_share,
                      seen or Seen(), semantic, titled)


def _build(index: RepoIndex, task: str, budget_tokens: int, counter: TokenCounter,
           map_share: float, seen: Seen, semantic: bool, titled: bool) -> TaskContext:
    task = without_reports(task)
    focus = focus_of(index, task)
    # One BM25 pass serves the ranking and the snippets; snippets are hash-checked when read.
    chunk_hits = index.search(task, LEXICAL_DEPTH, verify=False)
    ranked = rank_files(index, task, limit=LEXICAL_DEPTH, focus=focus, chunk_hits=chunk_hits,
                        titled=titled)
    found = semantic_files(index, task) if semantic else None
    if found is not None:
        ranked = fuse_semantic(ranked, found, LEXICAL_DEPTH)
    unseen = [(p, s) for p, s in ranked if p not in seen.outlined and not seen.covers(p, 1, WHOLE)]
    repo_map = build_repo_map(index, task, int(budget_tokens * map_share), counter,
                              ranked=unseen, focus=focus)
    file_rank = {p: i for i, (p, _) in enumerate(ranked)}
    candidates: list[tuple[float, str, int, int]] = []
    top = [p for p, _ in ranked[:_TOP_FILES]]
    for path, hits in index.definitions_in(top).items():
        for hit in hits:
            if hit.name in focus.identifiers:
                end = min(hit.end_line, hit.start_line + MAX_SNIPPET_LINES - 1)
                candidates.append((3.0 / (1 + file_rank[path]), path, hit.start_line, end))
    for chunk in chunk_hits[:_SEARCH_DEPTH]:
        position = file_rank.get(chunk.path)
        boost = 1.0 if position is None else 1.0 + 4.0 / (1 + position)
        candidates.append((chunk.score * boost / 10.0, chunk.path, chunk.start_line,
                           chunk.end_line))
    candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
    used = repo_map.tokens
    parts = [repo_map.text]
    snippets: list[Snippet] = []
    covered: dict[str, list[tuple[int, int]]] = {}
    file_lines: dict[str, Sequence[str] | None] = {}
    for _score, path, start, end in candidates:
        spans = covered.setdefault(path, [])
        if any(s <= start and end <= e for s, e in spans) or seen.covers(path, start, end):
            continue
        if (end - start + 1) * _MIN_TOKENS_PER_LINE > budget_tokens - used:
            continue  # cannot fit: skip before reading the file
        if path not in file_lines:
            file_lines[path] = index.read_lines(path)
        lines = file_lines[path]
        if lines is None:
            continue
        body = f"\n{path} (lines {start}-{end}):\n" + number_lines(lines[start - 1:end], start)
        cost = counter.count(body) + 1  # and the line break that joins it on
        if used + cost > budget_tokens:
            continue
        used += cost
        parts.append(body)
        spans.append((start, end))
        snippets.append(Snippet(path, start, end, body))
    # As in the repo map: the parts' counts summed, never less than the joined text's.
    return TaskContext("\n".join(parts), used, repo_map, snippets, ranked, found is not None)
