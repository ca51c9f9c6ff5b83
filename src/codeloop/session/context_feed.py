"""Code context on every turn: the task context once the index is ready, then refreshes.

The first context ranks the repository for the task (files, their outlines in a repo map,
the best snippets) within a budget; it is built on the index's thread as soon as the index
opens, and the first model call is held for it until `first_wait_s` after the index thread
started. Later turns add the
files the model's reading and editing point at (the session focus), never what the
conversation already shows. Each is a `ContextBuilt` event: the log says what went in.
"""

from __future__ import annotations

import contextlib
import posixpath
import sqlite3
import threading
import time
from dataclasses import dataclass

import numpy as np

from codeloop.context.retrieval import WHOLE, Seen, TaskContext, build_task_context
from codeloop.context.tokens import get_counter
from codeloop.errors import CodeloopError
from codeloop.events import ContextBuilt, ContextSpan, ModelCallFinished, ToolCallFinished
from codeloop.index import embeddings
from codeloop.index.service import RepoIndex
from codeloop.index.warmup import IndexWarmup
from codeloop.policy.redact import Redactor
from codeloop.policy.untrusted import inspect, wrap_untrusted
from codeloop.session.state import SessionState

# How long after the session's index began opening the first model call may be held for
# the task context, by default (`context_wait_s`): a warm sympy index is open and swept in
# 0.17–0.26 s at load 7–9 and its first context built 0.15–0.2 s later (~0.2 s of CPU in
# all: see docs/benchmarks.md "Session start"), so the wait is the bound for a slow disk or
# a heavier load; with the loop's set-up (0.17–0.27 s at that load) the first call still
# comes within 1 s of the session's start. A cold index is not waited for.
FIRST_WAIT_S = 0.7
TASK_HEADER = ("# Code context for the task\nFrom codeloop's code index: the files ranked "
               "most relevant to the task, their outlines (`line│ signature`) and the best "
               "snippets. A starting point, not the whole story: read a file before you edit "
               "it.\n\n")
REFRESH_HEADER = ("# More code context\nFiles related to what you read and edited so far, "
                  "not shown before in this conversation.\n\n")
# Arguments whose values say what the model is looking at.
_FOCUS_ARGS = ("path", "query", "name", "pattern", "focus")
_USED_NAMES = 40


@dataclass(frozen=True)
class ContextBudgets:
    """Tokens for the first context, its repo map's share, and each refresh."""

    task: int = 20_000
    map_share: float = 0.25
    refresh: int = 3_000

    @classmethod
    def for_window(cls, window: int, reserve_output: int, configured: int | None,
                   repo_map: int | None) -> ContextBudgets:
        """The configured task budget, else a fifth of the window's input (at most 20K);
        `repo_map` tokens of it for the map when configured."""
        task = configured if configured is not None else min(20_000,
                                                              max(0, window - reserve_output) // 5)
        share = 0.25 if repo_map is None or task == 0 else min(1.0, repo_map / task)
        return cls(task, share, min(3_000, task // 6))


class ContextFeed:
    """What the loop asks before each model call: the context events to record first."""

    def __init__(self, warmup: IndexWarmup, task: str, budgets: ContextBudgets,
                 redactor: Redactor | None = None, first_wait_s: float = FIRST_WAIT_S) -> None:
        self.warmup = warmup
        self.task = task
        self.budgets = budgets
        self.redactor = redactor or Redactor()
        self.first_wait_s = first_wait_s
        # Only when asked for by name: installed alone, search_code fuses them but the task
        # context does not (they lowered the localisation benchmark's recall@5).
        self.semantic = embeddings.available() and embeddings.asked_for()
        self._lock = threading.Lock()
        self._prepared: tuple[TaskContext, float] | None = None
        # Seconds from the session's start to the first context built ahead (benchmarks).
        self.prepared_after_s: float | None = None

    def prepare(self, index: RepoIndex) -> None:
        """On the index's thread, as soon as it opens: the first context, built ahead; then
        (the first model call no longer waiting) what later contexts reuse."""
        if self.budgets.task <= 0:
            return
        built = self._build(index, self.task, self.budgets.task, self.budgets.map_share, Seen())
        with self._lock:
            self._prepared = built
        self.prepared_after_s = time.monotonic() - self.warmup.started
        self.warmup.ready()
        with contextlib.suppress(CodeloopError, OSError, sqlite3.Error):
            index.expand_vocabularies()
            index.preload_definitions()

    def events(self, state: SessionState) -> list[ContextBuilt]:
        """The context to add before this turn: the task context if it is not in yet (and
        the index is ready), else a refresh when the model looked at new files."""
        if self.budgets.task <= 0:
            return []
        # A session logged before contexts existed has its repo map in the start event.
        first = not any(c.phase == "task" for c in state.contexts) and not (
            state.started is not None and state.started.repo_map)
        if first:
            # A deadline from the index thread's start, not from this call: the loop's own
            # set-up time is not added to the session's time to its first model call.
            deadline = self.warmup.started + self.first_wait_s
            wait = max(0.0, deadline - time.monotonic()) if state.steps == 0 else 0.0
            if not self.warmup.wait_ready(wait):
                return []  # still on the index's thread: a later turn gets it
            index = self.warmup.wait(0)
            if index is None:
                return []
            seen = seen_in(state)
            with self._lock:
                prepared, self._prepared = self._prepared, None
            if prepared is None or seen.spans:
                # Not built ahead, or the model read files since: build it now, without them.
                prepared = self._build(index, self.task, self.budgets.task,
                                       self.budgets.map_share, seen)
            if prepared is None:
                return []
            if not prepared[0].snippets and not prepared[0].repo_map.shown:
                self.budgets = ContextBudgets(0, 0.0, 0)  # no code to show: never again
                return []
            return [self._event("task", prepared, [], self.budgets.task)]
        index = self.warmup.wait(0)
        paths, words = focus_since_last(state)
        earlier = {p for c in state.contexts for p in c.focus}
        # Refreshes together get at most the task context's budget: a long session reads
        # many files, and the conversation keeps what the model read itself.
        spent = sum(c.tokens for c in state.contexts if c.phase == "refresh")
        budget = min(self.budgets.refresh, self.budgets.task - spent)
        if index is None or budget <= 0 or not set(paths) - earlier:
            return []  # only a file not looked at before makes a refresh worth its tokens
        focus = [*paths, *words]
        # The files and what they use from elsewhere: the definitions the model will need
        # next (the task itself was ranked for in the first context).
        text = "\n".join([*focus, " ".join(names_used_by(index, paths))])
        built = self._build(index, text, budget, 0.5, seen_in(state), titled=False)
        if built is None or (not built[0].snippets and not built[0].repo_map.files):
            return []
        return [self._event("refresh", built, focus, budget)]

    def _build(self, index: RepoIndex, text: str, budget: int, share: float, seen: Seen,
               titled: bool = True) -> tuple[TaskContext, float] | None:
        """The context and its build time; None when the index failed under it (the
        session goes on with the search tools, which say what is wrong)."""
        begin = time.perf_counter()
        try:
            context = build_task_context(index, text, budget, get_counter(), share, seen,
                                         semantic=self.semantic, titled=titled)
        except (CodeloopError, OSError, sqlite3.Error):
            return None
        return context, (time.perf_counter() - begin) * 1000

    def _event(self, phase: str, built: tuple[TaskContext, float], focus: list[str],
               budget: int) -> ContextBuilt:
        context, build_ms = built
        counter = get_counter()
        spans = [ContextSpan(path=p, kind="outline") for p in context.repo_map.files]
        spans += [ContextSpan(path=s.path, start_line=s.start_line, end_line=s.end_line,
                              tokens=counter.count(s.text)) for s in context.snippets]
        header = TASK_HEADER if phase == "task" else REFRESH_HEADER
        seen = inspect(context.text)
        body = self.redactor.redact(seen.text).text
        if seen.flags:
            # Repository text that looks like instructions: fenced, and the session tainted.
            body = wrap_untrusted(body, seen.flags, seen.notes, what="REPOSITORY CODE",
                                  source="code index")
        return ContextBuilt(
            phase="task" if phase == "task" else "refresh", text=header + body,
            ranked=[p for p, _ in context.ranked_files[:20]], spans=spans, focus=focus,
            tokens=context.tokens, budget=budget, build_ms=round(build_ms, 2),
            index_ready_s=round(self.warmup.ready_after_s or 0.0, 3),
            embeddings=context.semantic, untrusted=bool(seen.flags))


def names_used_by(index: RepoIndex, paths: list[str], limit: int = _USED_NAMES) -> list[str]:
    """Names the files reference that other files define, the most specific first."""
    graph = index.graph()
    ids = [graph.index[p] for p in paths if p in graph.index]
    if not ids:
        return []
    by_id = index.memo("graph_name_by_id", lambda: {v: k for k, v in graph.names.items()})
    used = graph.edge_name[np.isin(graph.src, ids) & (graph.edge_name >= 0)]
    names = {by_id[int(i)] for i in np.unique(used) if int(i) in by_id}
    definers = index.files_defining(names)
    return sorted(names, key=lambda n: (len(definers.get(n, ())), n))[:limit]


def _norm(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/")).lstrip("/").removeprefix("./")


def seen_in(state: SessionState) -> Seen:
    """What the conversation shows already: earlier contexts and the files the model read."""
    seen = Seen()
    for context in state.contexts:
        for span in context.spans:
            if span.kind == "outline":
                seen.outlined.add(span.path)
            else:
                seen.add_span(span.path, span.start_line, span.end_line)
    calls = {}
    for event in state.transcript:
        if isinstance(event, ModelCallFinished):
            calls.update({c.id: c for c in event.tool_calls})
        elif isinstance(event, ToolCallFinished) and event.ok and event.name == "read_file":
            call = calls.get(event.call_id)
            args = call.arguments if call is not None else None
            if args and isinstance(args.get("path"), str):
                start = args.get("start_line") or 1
                end = args.get("end_line") or WHOLE
                seen.add_span(_norm(args["path"]), int(start), int(end))
    return seen


def focus_since_last(state: SessionState) -> tuple[list[str], list[str]]:
    """The paths the model read or edited, and what it searched for, since the last
    context."""
    last = max((i for i, e in enumerate(state.transcript) if e.type == "context_built"),
               default=-1)
    calls = {}
    paths: list[str] = []
    words: list[str] = []
    for event in state.transcript[last + 1:]:
        if isinstance(event, ModelCallFinished):
            calls.update({c.id: c for c in event.tool_calls})
        elif isinstance(event, ToolCallFinished) and event.ok:
            call = calls.get(event.call_id)
            args = (call.arguments if call is not None else None) or {}
            for key in _FOCUS_ARGS:
                value = args.get(key)
                if isinstance(value, str) and value.strip():
                    if key == "path":
                        if event.name != "list_files" and _norm(value) != ".":
                            paths.append(_norm(value))
                    else:
                        words.append(value.strip()[:200])
    return list(dict.fromkeys(paths)), list(dict.fromkeys(words))
