"""Tools over the code index: search_code, find_symbol, find_references, repo_map."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codeloop.context.budget import fit_text
from codeloop.context.repomap import build_repo_map
from codeloop.context.retrieval import number_lines
from codeloop.index.registry import open_index
from codeloop.index.service import RepoIndex
from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup
from codeloop.tools.base import Observation, Tool, ToolArgs, ToolContext
from codeloop.tools.visibility import visible

OUTPUT_TOKENS = 4_000
# How long a search waits for an index still being built before saying it is not ready.
INDEX_WAIT_S = 5.0
_SNIPPET_LINES = 30


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


def _observation(text: str, hint: str, data: dict[str, Any], limit_hit: bool) -> Observation:
    body, cut = fit_text(text, OUTPUT_TOKENS, hint)
    if limit_hit and not cut:
        body += f"\n[more results exist; {hint}]"
    return Observation(ok=True, output=body, truncated=cut or limit_hit, data=data)


class SearchCodeArgs(ToolArgs):
    query: str = Field(min_length=1, description="words, identifiers or a description of the code")
    limit: int = Field(default=8, ge=1, le=50, description="how many chunks to return")


class SearchCode(Tool):
    name = "search_code"
    description = ("Ranked search over the repository's code (BM25 over functions and classes, "
                   "identifier-aware). Returns the best chunks with line numbers.")
    args_model = SearchCodeArgs
    tier = "read"

    def run(self, args: SearchCodeArgs, ctx: ToolContext) -> Observation:
        hits = visible(ctx, index_for(ctx).search(args.query, args.limit), lambda h: h.path)
        if not hits:
            return Observation(ok=True, output=f"no code matches {args.query!r}; try other "
                               "words, find_symbol, or grep for an exact string")
        parts = []
        for h in hits:
            lines = h.text.splitlines()
            shown = lines[:_SNIPPET_LINES]
            more = (f"\n{'':>6}│ … {len(lines) - len(shown)} more lines: read_file "
                    f"{h.path} lines {h.start_line}-{h.end_line}") if len(lines) > len(shown) else ""
            title = f"{h.path}:{h.start_line}-{h.end_line}" + (f" ({h.symbol})" if h.symbol else "")
            parts.append(f"{title}\n{number_lines(shown, h.start_line)}{more}")
        data = {"hits": [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
                          "symbol": h.symbol, "score": round(h.score, 3)} for h in hits]}
        return _observation("\n\n".join(parts), "raise `limit` or read_file a range", data,
                            len(hits) == args.limit)


class FindSymbolArgs(ToolArgs):
    name: str = Field(min_length=1, description="a name, or Parent.name for a method")
    limit: int = Field(default=20, ge=1, le=200)


class FindSymbol(Tool):
    name = "find_symbol"
    description = ("Where a function, class, method or constant is defined: path, line span, "
                   "kind and signature. Falls back to names starting with the text.")
    args_model = FindSymbolArgs
    tier = "read"

    def run(self, args: FindSymbolArgs, ctx: ToolContext) -> Observation:
        hits = visible(ctx, index_for(ctx).find_symbol(args.name, args.limit), lambda h: h.path)
        if not hits:
            return Observation(ok=True, output=f"no definition named {args.name!r}; try "
                               "search_code or grep")
        lines = [f"{h.path}:{h.start_line}-{h.end_line} {h.kind} "
                 f"{(h.parent + '.') if h.parent else ''}{h.name}: {h.signature}" for h in hits]
        data = {"definitions": [h.__dict__ for h in hits]}
        return _observation("\n".join(lines), "raise `limit` or give Parent.name", data,
                            len(hits) == args.limit)


class FindReferencesArgs(ToolArgs):
    name: str = Field(min_length=1, description="the name whose uses to find")
    limit: int = Field(default=50, ge=1, le=500)


class FindReferences(Tool):
    name = "find_references"
    description = ("Places that call or name a symbol (from the syntax tree, not text "
                   "matching), each with its line.")
    args_model = FindReferencesArgs
    tier = "read"

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

    def run(self, args: RepoMapArgs, ctx: ToolContext) -> Observation:
        result = build_repo_map(index_for(ctx), args.focus, args.max_tokens)
        return Observation(ok=True, output=result.text + "\n[raise max_tokens or narrow the "
                           "focus for more; read_file shows a file]",
                           data={"files": result.files, "tokens": result.tokens})


SEARCH_TOOLS: tuple[type[Tool], ...] = (SearchCode, FindSymbol, FindReferences, RepoMapTool)
