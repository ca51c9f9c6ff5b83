"""Section budgets and fitting text into them, always with a visible note when cut."""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.context.tokens import TokenCounter, get_counter


@dataclass(frozen=True)
class SectionBudgets:
    """Token budgets per context section; `total` is the window minus the reserved output.

    The one place the sections' sizes are set: the plan, tool outputs and file views are
    all cut to these (the task context has its own, `session.context_feed`).
    """

    total: int
    project_instructions: int = 2_000
    repo_map: int = 4_000
    plan: int = 1_500
    tool_output: int = 4_000
    file_view: int = 6_000

    @classmethod
    def for_window(cls, context_window: int, reserve_output: int = 4_096) -> SectionBudgets:
        """Budgets scaled to a model's window (the defaults suit ~128k; small windows shrink)."""
        total = max(1_000, context_window - reserve_output)
        scale = min(1.0, total / 100_000)
        return cls(
            total=total,
            project_instructions=max(300, int(2_000 * scale)),
            repo_map=max(500, int(4_000 * scale)),
            plan=max(300, int(1_500 * scale)),
            tool_output=max(500, int(4_000 * scale)),
            file_view=max(800, int(6_000 * scale)),
        )


def fit_text(text: str, budget_tokens: int, how_to_see_more: str,
             counter: TokenCounter | None = None) -> tuple[str, bool]:
    """`text` if it fits, else its head and tail with a note saying what was cut and how to
    see it; returns (text, truncated)."""
    counter = counter or get_counter()
    total = counter.count(text)
    if total <= budget_tokens:
        return text, False
    lines = text.splitlines()
    # Binary search on how many lines to keep (head takes 3/4, tail 1/4).
    lo, hi = 0, len(lines)
    best = _cut(lines, 0, how_to_see_more, total)
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = _cut(lines, mid, how_to_see_more, total)
        if counter.count(candidate) <= budget_tokens:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best, True


def _cut(lines: list[str], keep: int, how_to_see_more: str, total_tokens: int) -> str:
    head_n = (keep * 3 + 3) // 4
    tail_n = keep - head_n
    head = lines[:head_n]
    tail = lines[len(lines) - tail_n:] if tail_n else []
    dropped = len(lines) - len(head) - len(tail)
    note = (f"[… {dropped} of {len(lines)} lines ({total_tokens} tokens in all) not shown; "
            f"{how_to_see_more}]")
    return "\n".join([*head, note, *tail])
