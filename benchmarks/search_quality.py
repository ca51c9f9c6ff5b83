"""Search quality on the queries a model writes, against the strongest simple baseline.

From each SWE-bench instance this derives the queries a model solving it would type: the
issue's title, single sentences of its prose, identifiers it names, and `Class.method` of
the functions the gold patch changes (read from the index at the base commit). Each query
goes to `search_code` (ours: one result per file), to the previous `search_code` (chunks,
counted by distinct file) and to BM25 with code-aware tokens over whole source files
(`swebench_repos.CodeBm25`). A query hits at 5 when a file the gold patch touches is among
the first 5 distinct files; MRR is over the first 20. `symbol_hit` is the share of the
identifier and `Class.method` queries for which `find_symbol` returns a definition in a
gold file.

    PYTHONPATH=src python benchmarks/search_quality.py --instances DATA/instances.jsonl \\
        --mirrors MIRRORS --limit 30 --details OUT/search.jsonl
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from localize_replay import replayable
from swebench_repos import (
    CodeBm25,
    add_data_options,
    check_data_options,
    checkout,
    gold_files,
    gold_lines,
    load_instances,
    mirror_of,
)

from codeloop.eval.compare import bootstrap_grouped_mean
from codeloop.index import embeddings
from codeloop.index.code_search import search_code
from codeloop.index.focus import code_words, without_reports
from codeloop.index.history import title_of
from codeloop.index.rank import signals
from codeloop.index.service import RepoIndex
from codeloop.index.symbol_lookup import lookup

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
DEPTH = 20
KINDS = ("title", "sentence", "identifier", "class_method")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
# Issue templates: hidden comments, headings and bold labels are not what a model searches.
_TEMPLATE = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_LABEL = re.compile(r"^\*\*[^*]{1,40}\*\*:?\s*")
_BUILTIN_NAMES = frozenset(dir(builtins))
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE_PREFIXES = (">>>", "In [", "...", "$ ", "Traceback", "File ")


def _code_like(word: str) -> bool:
    if word in _BUILTIN_NAMES or (word.isupper() and "_" not in word):
        return False
    return "_" in word.strip("_") or any(c.isupper() for c in word[1:])


def sentences(text: str, count: int) -> list[str]:
    """The first `count` sentences of the prose (6 to 30 words), title and code left out."""
    prose = _TEMPLATE.sub("\n", _FENCE.sub("\n", without_reports(text)))
    lines = [_LABEL.sub("", line.strip()) for line in prose.splitlines()[1:]
             if line.strip() and not line.startswith(("    ", "\t"))
             and not line.lstrip().startswith((*_CODE_PREFIXES, "#"))]
    out: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(lines)):
        if 6 <= len(sentence.split()) <= 30:
            out.append(sentence.strip())
            if len(out) == count:
                break
    return out


def identifiers(text: str, count: int) -> list[str]:
    """The first `count` distinct code-like identifiers the text uses as code (not Python
    builtins such as `ValueError`, nor all-capital words such as SQL's `SELECT`)."""
    text = _TEMPLATE.sub("\n", without_reports(text))
    used = code_words(text)
    out: list[str] = []
    for word in _WORD.findall(text):
        if word in used and _code_like(word) and len(word) >= 4 and word not in out:
            out.append(word)
            if len(out) == count:
                break
    return out


def changed_functions(index: RepoIndex, patch: str, count: int) -> list[str]:
    """`Class.method` (or `function`) of the innermost definitions the patch's hunks change."""
    out: list[str] = []
    for path, ranges in gold_lines(patch).items():
        defs = [d for d in index.definitions_in([path])[path]
                if d.kind in {"function", "method"}]
        for start, end in ranges:
            # Hunks carry 3 lines of context on each side: the change is in the middle.
            middle = (start + end) // 2
            around = [d for d in defs if d.start_line <= middle <= d.end_line]
            if around:
                inner = min(around, key=lambda d: d.end_line - d.start_line)
                name = f"{inner.parent}.{inner.name}" if inner.parent else inner.name
                if name not in out:
                    out.append(name)
    return out[:count]


def model_queries(row: dict[str, Any], index: RepoIndex, per_kind: int) -> list[tuple[str, str]]:
    text = row["problem_statement"]
    queries = [("title", title_of(text))]
    queries += [("sentence", s) for s in sentences(text, per_kind)]
    queries += [("identifier", w) for w in identifiers(text, per_kind)]
    queries += [("class_method", n) for n in changed_functions(index, row["patch"], per_kind)]
    return [(kind, q) for kind, q in queries if q.strip()]


def rank_scores(ranked: list[str], gold: set[str]) -> dict[str, float]:
    first = next((i for i, p in enumerate(ranked[:DEPTH]) if p in gold), None)
    return {"hit_at_5": float(first is not None and first < 5),
            "rr": 0.0 if first is None else 1.0 / (first + 1)}


def distinct(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 4) if values else 0.0

    out: dict[str, Any] = {
        "hit_at_5": mean([r["ours"]["hit_at_5"] for r in rows]),
        "hit_at_5_bm25": mean([r["bm25"]["hit_at_5"] for r in rows]),
        "hit_at_5_chunks": mean([r["chunks"]["hit_at_5"] for r in rows]),
        "mrr": mean([r["ours"]["rr"] for r in rows]),
        "mrr_bm25": mean([r["bm25"]["rr"] for r in rows]),
        "mrr_chunks": mean([r["chunks"]["rr"] for r in rows]),
        "symbol_hit": mean([r["symbol_hit"] for r in rows if "symbol_hit" in r]),
        "symbol_queries": sum(1 for r in rows if "symbol_hit" in r),
        "queries": len(rows),
        "instances": len({r["instance"] for r in rows}),
    }
    # Queries of one instance share its gold files: the interval resamples instances.
    per_instance: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        per_instance[r["instance"]].append(r["ours"]["hit_at_5"] - r["bm25"]["hit_at_5"])
    margin = bootstrap_grouped_mean(list(per_instance.values()))
    out["hit_at_5_margin"] = round(margin.mean, 4)
    out["hit_at_5_margin_ci95"] = [round(margin.low, 4), round(margin.high, 4)]
    by_kind: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        by_kind[kind] = {"queries": len(mine),
                         "hit_at_5": mean([r["ours"]["hit_at_5"] for r in mine]),
                         "hit_at_5_bm25": mean([r["bm25"]["hit_at_5"] for r in mine]),
                         "hit_at_5_chunks": mean([r["chunks"]["hit_at_5"] for r in mine])}
    out["by_kind"] = by_kind
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_options(parser)
    parser.add_argument("--limit", type=int, default=0, help="at most this many instances")
    parser.add_argument("--repo", action="append", default=[], help="only this owner/name")
    parser.add_argument("--instance", action="append", default=[],
                        help="only this instance id (repeatable)")
    parser.add_argument("--per-kind", type=int, default=2,
                        help="sentences, identifiers and Class.method queries per instance")
    parser.add_argument("--workdir", type=Path, default=CACHE / "search-quality")
    parser.add_argument("--details", type=Path,
                        help="per-query scores (JSON lines); a rerun resumes from it")
    parser.add_argument("--record-signals", action="store_true",
                        help="also store each query's ranked lists in --details, for "
                             "localize_tune.py to replay other weights on")
    args = parser.parse_args()
    check_data_options(args)
    rows = load_instances(args.instances, args.repo, args.limit, args.instance)
    os.environ.setdefault("CODELOOP_CACHE_DIR", str(CACHE / "index-cache"))

    done: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if args.details is not None and args.details.exists():
        for line in args.details.read_text().splitlines():
            entry = json.loads(line)
            done[entry["instance"]].append(entry)
    results: list[dict[str, Any]] = []
    ours_ms: list[float] = []
    skipped: dict[str, str] = {}
    index: RepoIndex | None = None
    baseline = CodeBm25()
    current_repo = None
    try:
        for n, row in enumerate(rows, 1):
            iid = row["instance_id"]
            if iid in done:
                results.extend(done[iid])
                continue
            mirror, why = mirror_of(args.mirrors, row)
            if why is not None:
                skipped[iid] = why
                continue
            work = checkout(mirror, args.workdir / row["repo"].replace("/", "+"),
                            row["base_commit"])
            if row["repo"] != current_repo:
                if index is not None:
                    index.close()
                index = RepoIndex(work)
                current_repo = row["repo"]
            assert index is not None
            index.update()
            # Built once per HEAD, not per query (a session's HEAD rarely moves): untimed.
            index.graph()
            index.commit_search()
            if embeddings.enabled():
                # search_code fuses them once a background thread has built them; the
                # figures are for a session whose repository is embedded already.
                embeddings.rank_files_semantic_ready(index, "", 1)
                embeddings.wait_until_built(index)
            baseline.index(work, index.paths())
            gold = set(gold_files(row["patch"]))
            mine: list[dict[str, Any]] = []
            for kind, query in model_queries(row, index, args.per_kind):
                started = time.perf_counter()
                ours = [r.path for r in search_code(index, query, DEPTH).results]
                ours_ms.append((time.perf_counter() - started) * 1000)
                chunks = distinct([h.path for h in index.search(query, DEPTH * 3,
                                                                verify=False)])
                entry: dict[str, Any] = {
                    "instance": iid, "repo": row["repo"], "kind": kind, "query": query,
                    "ours": rank_scores(ours, gold), "chunks": rank_scores(chunks, gold),
                    "bm25": rank_scores(baseline.rank(query, DEPTH), gold),
                    "ms": round(ours_ms[-1], 1)}
                if args.record_signals:
                    entry["gold"] = sorted(gold)
                    entry["signals"] = replayable(signals(index, query), index)
                if kind in {"identifier", "class_method"}:
                    found = lookup(index, query)
                    entry["symbol_hit"] = float(any(h.path in gold for h in found.hits))
                    entry["symbol_how"] = found.how
                mine.append(entry)
            if args.details is not None:
                with args.details.open("a") as fh:
                    fh.writelines(json.dumps(e) + "\n" for e in mine)
            results.extend(mine)
            summary = summarise(mine) if mine else {}
            print(f"[{n}/{len(rows)}] {iid}: {len(mine)} queries hit@5 ours "
                  f"{summary.get('hit_at_5', 0):.2f} bm25 {summary.get('hit_at_5_bm25', 0):.2f}",
                  flush=True)
    finally:
        if index is not None:
            index.close()
    figures = summarise(results)
    figures["search_p50_ms"] = round(statistics.median(ours_ms), 1) if ours_ms else 0.0
    figures["search_p95_ms"] = (round(statistics.quantiles(ours_ms, n=20)[18], 1)
                                if len(ours_ms) > 1 else 0.0)
    figures["skipped"] = skipped
    for kind, cells in figures["by_kind"].items():
        print(f"{kind:>13}: " + "  ".join(f"{k}={v}" for k, v in cells.items()))
    print(json.dumps(figures))


if __name__ == "__main__":
    sys.exit(main())
