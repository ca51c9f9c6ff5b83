"""Tools over the code index: search_code, find_symbol, find_references, repo_map."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import Field

from codeloop.context.budget import fit_text
from codeloop.context.repomap import build_repo_map
from codeloop.context.retrieval import number_lines
from codeloop.index.code_search import FOLDED, FileResult, search_code
from codeloop.index.hits import ChunkHit, SymbolHit
from codeloop.index.registry import open_index
from codeloop.index.service import RepoIndex
from codeloop.index.sweep import BuildProgress
from codeloop.index.symbol_lookup import lookup
from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext
from codeloop.tools.visibility import visible

OUTPUT_TOKENS = 4_000
# How long a search waits for an index still being built before saying it is not ready.
INDEX_WAIT_S = 5.0
_SNIPPET_LINES = 30
ToolT = TypeVar("ToolT", bound=Tool)
ArgsT = TypeVar("ArgsT", bound=ToolArgs)


def index_for(ctx: ToolContext) -> RepoIndex:
    """The session's index service if the loop provides one, else one opened for the path."""
    service = ctx.services.get("index")
    if isinstance(service, RepoIndex):
        return service
    warmup = ctx.services.get(WARMUP_SERVICE)
    if isinstance(warmup, IndexWarmup):
        # The session builds it on a thread: never a second build of the same tree here.
        return warmup.for_tool(INDEX_WAIT_S)
    index = open_index(ctx.workspace.path, seed=ctx.workspace.root)
    # Kept for the session so the loop can tell it about edits as they happen.
    ctx.services["index"] = index
    return index


def with_progress(observation: Observation, progress: BuildProgress | None) -> Observation:
    """Say in the result when it came from an index still being built (and how far it is),
    so the model knows a miss may only mean "not indexed yet"."""
    if progress is None:
        return observation
    observation.output = (f"[partial index: {progress.describe()}; the build goes on, so "
                          "files not indexed yet are missing here (grep and read_file see "
                          "every file)]\n" + observation.output)
    observation.data["partial"] = {"indexed": progress.indexed, "total": progress.total}
    return observation


def reports_partial(run: Callable[[ToolT, ArgsT, ToolContext], Observation]
                    ) -> Callable[[ToolT, ArgsT, ToolContext], Observation]:
    """A search tool's `run` that goes before any sweep and whose result says when the
    index was partial as it began."""
    @functools.wraps(run)
    def wrapped(tool: ToolT, args: ArgsT, ctx: ToolContext) -> Observation:
        index = index_for(ctx)
        progress = index.progress()
        with index.reading():  # a sweep under way waits for it
            return with_progress(run(tool, args, ctx), progress)
    return wrapped


def _observation(text: str, hint: str, data: dict[str, Any], limit_hit: bool) -> Observation:
    body, cut = fit_text(text, OUTPUT_TOKENS, hint)
    if limit_hit and not cut:
        body += f"\n[more results exist; {hint}]"
    return Observation(ok=True, output=body, truncated=cut or limit_hit, data=data)


class SearchCodeArgs(ToolArgs):
    query: str = Field(min_length=1, description="words, identifiers or a description of the code")
    limit: int = Field(default=6, ge=1, le=30, description="how many files to return")
    glob: str | None = Field(default=None, description="only paths matching, e.g. 'src/*.py'")


def _folded(others: tuple[ChunkHit, ...]) -> str:
    """The file's other matching chunks as line ranges: the model reads the file next."""
    if not others:
        return ""
    spans = [f"{h.start_line}-{h.end_line}" + (f" ({h.symbol})" if h.symbol else "")
             for h in others[:FOLDED]]
    more = f", +{len(others) - FOLDED} more" if len(others) > FOLDED else ""
    return f"\n{'':>6}│ also matching in this file: {', '.join(spans)}{more}"


def _result_text(result: FileResult, index: RepoIndex) -> str:
    h = result.best
    if h is None:
        # Ranked by its name, links or history, not by a chunk's text: show what it defines.
        defs = index.definitions_in([result.path])[result.path]
        names = ", ".join(dict.fromkeys(d.name for d in defs if d.parent is None))
        return f"{result.path} (no chunk matches the words; defines: {names[:300] or '-'})"
    lines = h.text.splitlines()
    shown = lines[:_SNIPPET_LINES]
    more = (f"\n{'':>6}│ … {len(lines) - len(shown)} more lines: read_file "
            f"{h.path} lines {h.start_line}-{h.end_line}") if len(lines) > len(shown) else ""
    title = f"{h.path}:{h.start_line}-{h.end_line}" + (f" ({h.symbol})" if h.symbol else "")
    return f"{title}\n{number_lines(shown, h.start_line)}{more}{_folded(result.others)}"


class SearchCode(Tool):
    name = "search_code"
    description = ("Ranked search over the repository's code for words, identifiers or a short "
                   "description: one result per file (its best function/class with line "
                   "numbers, other matches in it listed), source before tests and docs unless "
                   "the query mentions them or `glob` is given.")
    args_model = SearchCodeArgs
    tier = "read"

    @reports_partial
    def run(self, args: SearchCodeArgs, ctx: ToolContext) -> Observation:
        index = index_for(ctx)
        answer = search_code(index, args.query, args.limit, args.glob)
        results = visible(ctx, answer.results, lambda r: r.path)
        if not results:
            return Observation(ok=True, output=(
                f"no code matches {args.query!r}. {answer.tried()} Try a broader query: "
                "fewer or more general words, one identifier, no glob; find_symbol for a "
                "name you know, or grep for an exact string."),
                data={"files": [], "terms": list(answer.terms)})
        text = "\n\n".join(_result_text(r, index) for r in results)
        files = [{"path": r.path, "score": round(r.score, 4),
                  "start_line": r.best.start_line if r.best else None,
                  "end_line": r.best.end_line if r.best else None,
                  "symbol": r.best.symbol if r.best else None,
                  "also": [[h.start_line, h.end_line] for h in r.others]}
                 for r in results]
        data: dict[str, object] = {"files": files}
        if answer.semantic or answer.semantic_pending or answer.semantic_broken:
            data["embeddings"] = ("used" if answer.semantic else
                                  "pending" if answer.semantic_pending else "unavailable")
        return _observation(text, "raise `limit` or read_file a range", data,
                            len(results) == args.limit)


class FindSymbolArgs(ToolArgs):
    name: str = Field(min_length=1, description="a name, or Class.method")
    limit: int = Field(default=20, ge=1, le=200)


def _symbol_lines(hits: list[SymbolHit]) -> str:
    return "\n".join(f"{h.path}:{h.start_line}-{h.end_line} {h.kind} "
                     f"{(h.parent + '.') if h.parent else ''}{h.name}: {h.signature}"
                     for h in hits)


class FindSymbol(Tool):
    name = "find_symbol"
    description = ("Where a function, class, method or constant is defined: path, line span, "
                   "kind and signature. `Class.method` also finds a method inherited from a "
                   "base class, then any definition of that name; names starting with the "
                   "text otherwise, and close names when nothing matches.")
    args_model = FindSymbolArgs
    tier = "read"

    @reports_partial
    def run(self, args: FindSymbolArgs, ctx: ToolContext) -> Observation:
        index = index_for(ctx)
        found = lookup(index, args.name, args.limit)
        hits = visible(ctx, found.hits, lambda h: h.path)
        if not hits:
            # Only names defined in a file the session may read: a suggestion must not
            # reveal a name from a file a deny rule hides.
            defining = index.files_defining(n.rpartition(".")[2] for n in found.suggestions)
            close = [n for n in found.suggestions
                     if visible(ctx, defining[n.rpartition(".")[2]], lambda path: path)]
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            return Observation(ok=True, output=f"no definition named {args.name!r}.{hint} "
                               "Try search_code with words from the name, or grep.",
                               data={"definitions": [], "suggestions": close})
        owner = args.name.rpartition(".")[0].rpartition(".")[2]
        short = args.name.rpartition(".")[2]
        note = ""
        if found.how == "inherited":
            note = (f"{owner} does not define {short}; it inherits it from "
                    f"{found.inherited_from}:\n")
        elif found.how == "prefix":
            note = f"no definition named exactly {short}; names starting with it:\n"
        elif found.how == "bare":
            searched = ", ".join([owner, *found.bases][:8])
            note = (f"no {short} on {searched}; definitions named {short} elsewhere:\n")
        data = {"definitions": [h.__dict__ for h in hits], "resolved": found.how}
        return _observation(note + _symbol_lines(hits), "raise `limit` or give Class.name",
                            data, len(hits) == args.limit)


class FindReferencesArgs(ToolArgs):
    name: str = Field(min_length=1, description="the name whose uses to find")
    limit: int = Field(default=50, ge=1, le=500)


class FindReferences(Tool):
    name = "find_references"
    description = ("Places that call or name a symbol (from the syntax tree, not text "
                   "matching), each with its line.")
    args_model = FindReferencesArgs
    tier = "read"

    @reports_partial
    def run(self, args: FindReferencesArgs, ctx: ToolContext) -> Observation:
        hits = visible(ctx, index_for(ctx).find_references(args.name, args.limit),
                       lambda h: h.path)
        if not hits:
            return Observation(ok=True, output=f"no references to {args.name!r} found; grep "
                               "finds textual uses")
        lines = [f"{h.path}:{h.line}: {h.text.strip()}" for h in hits]
        data = {"references": [{"path": h.path, "line": h.line} for h in hits]}
        return _observation("\n".join(lines), "raise `limit` or grep within one directory",
                            data, len(hits) == args.limit)


class RepoMapArgs(ToolArgs):
    focus: str = Field(default="", description="what to focus on: words, names or paths")
    max_tokens: int = Field(default=2_000, ge=200, le=8_000)


class RepoMapTool(Tool):
    name = "repo_map"
    description = ("A map of the repository: the files most relevant to `focus` with their "
                   "key definitions (line and signature), ranked by references and text.")
    args_model = RepoMapArgs
    tier = "read"

    @reports_partial
    def run(self, args: RepoMapArgs, ctx: ToolContext) -> Observation:
        result = build_repo_map(index_for(ctx), args.focus, args.max_tokens)
        return Observation(ok=True, output=result.text + "\n[raise max_tokens or narrow the "
                           "focus for more; read_file shows a file]",
                           data={"files": result.files, "tokens": result.tokens})


SEARCH_TOOLS: tuple[type[Tool], ...] = (SearchCode, FindSymbol, FindReferences, RepoMapTool)
