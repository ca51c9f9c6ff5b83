"""Show a large file as its signatures with function bodies elided."""

from __future__ import annotations

from codeloop.context.budget import fit_text
from codeloop.context.tokens import TokenCounter, get_counter
from codeloop.index.languages import detect_language
from codeloop.index.symbols import extract

_FUNCTION_KINDS = {"function", "method"}
_MAX_HEADER_LINES = 6


def _header_end(lines: list[str], start: int, end: int) -> int:
    """Last line (1-based) of a definition's header: where `:` or `{` closes it."""
    for n in range(start, min(end, start + _MAX_HEADER_LINES - 1) + 1):
        stripped = lines[n - 1].split("#", 1)[0].rstrip()
        if stripped.endswith((":", "{")) or ") {" in stripped or "=>" in stripped:
            return n
    return start


def outline(rel_path: str, source: str) -> str:
    """Numbered lines of `source` where every function body longer than its header is
    replaced by one `⋮` line naming the elided range."""
    lines = source.splitlines()
    defs = extract(source.encode(), detect_language(rel_path)).definitions
    elide: list[tuple[int, int]] = []
    for d in sorted(defs, key=lambda x: x.start_line):
        if d.kind not in _FUNCTION_KINDS or any(s <= d.start_line <= e for s, e in elide):
            continue
        body_start = _header_end(lines, d.start_line, d.end_line) + 1
        if d.end_line - body_start >= 1:
            elide.append((body_start, d.end_line))
    out: list[str] = []
    n = 1
    spans = iter(elide)
    span = next(spans, None)
    while n <= len(lines):
        if span is not None and n == span[0]:
            indent = len(lines[n - 1]) - len(lines[n - 1].lstrip())
            out.append(f"{'':>6}│ {' ' * indent}⋮ (lines {span[0]}-{span[1]} elided)")
            n = span[1] + 1
            span = next(spans, None)
            continue
        out.append(f"{n:>6}│ {lines[n - 1]}")
        n += 1
    return "\n".join(out)


def show_file(rel_path: str, source: str, budget_tokens: int,
              counter: TokenCounter | None = None) -> tuple[str, str]:
    """The file for the model within the budget: whole, else outlined, else outlined and cut.
    Returns (text, mode) with mode "full", "outline" or "outline-truncated"."""
    counter = counter or get_counter()
    full = "\n".join(f"{i:>6}│ {line}" for i, line in enumerate(source.splitlines(), 1))
    if counter.count(full) <= budget_tokens:
        return full, "full"
    shape = outline(rel_path, source)
    hint = "read_file with a line range shows any part in full"
    text, cut = fit_text(shape, budget_tokens, hint, counter)
    if not cut:
        text += f"\n[function bodies elided to fit the budget; {hint}]"
    return text, "outline-truncated" if cut else "outline"

