"""Localisation benchmark: rank a repository's files from an issue's text alone.

For each SWE-bench instance the repository is checked out at `base_commit` (one shared clone
per repository, switched from commit to commit, so our index updates incrementally), and
three rankers are scored on the files the gold patch touches: ours (`rank_files`), BM25 over
whole source files with code-aware tokens (`swebench_repos.CodeBm25`: the SWE-bench paper's
retrieval baseline, made as strong as a simple BM25 gets), and Aider's repo map
(`aider-chat` in its own venv under benchmarks/.cache/). `span_in_context_pct` is the share
of instances whose every gold function/class (`expected_spans`) appears in the context built
within the budget: for us the task context (repo map + code), for BM25 whole files in rank
order, for Aider its rendered map. With `--embeddings` it also scores ours fused with the
optional model2vec embeddings, and the embeddings alone, on the same instances.

    PYTHONPATH=src python benchmarks/localize.py --instances DATA/instances.jsonl \
        --mirrors MIRRORS --limit 20 --details OUT/localize.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from localize_aider import AiderMap, aider_span_in_map
from localize_replay import half_of, replayable, rescored, scores
from swebench_repos import (
    CodeBm25,
    add_data_options,
    check_data_options,
    checkout,
    git,
    gold_files,
    in_commit_order,
    load_instances,
    mirror_of,
)

from codeloop.context.retrieval import build_task_context
from codeloop.context.tokens import get_counter
from codeloop.eval.compare import bootstrap_mean
from codeloop.index import embeddings
from codeloop.index.rank import (
    LEXICAL_DEPTH,
    fuse,
    fuse_semantic,
    order,
    signals,
)
from codeloop.index.service import RepoIndex
from codeloop.index.term_indexes import keep_tokens_between_rebuilds

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"


def summarise(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = ["recall_at_1", "recall_at_5", "recall_at_10", "mrr", "span_in_context_pct"]
    out: dict[str, float] = {"instances": len(rows)}
    for key in keys:
        values = [r[key] for r in rows if key in r]
        if values or key != "span_in_context_pct":  # a ranker with no context has no span
            mean = statistics.fmean(values) if values else 0.0
            out[key] = round(mean * (100 if key.endswith("pct") else 1), 4)
    return out


def _interval(values: list[float]) -> list[float]:
    found = bootstrap_mean(values)
    return [round(found.low, 4), round(found.high, 4)]


def span_lines(index: RepoIndex, spans: dict[str, list[str]]) -> list[tuple[str, int, int]] | None:
    """(path, start, end) of each expected span, or None when one cannot be found."""
    out = []
    for path, names in spans.items():
        defs = index.definitions_in([path])[path]
        for name in names:
            parent, _, short = name.rpartition(".")
            match = [d for d in defs if d.name == short and (not parent or d.parent == parent)]
            if not match:
                return None
            out.append((path, match[0].start_line, match[0].end_line))
    return out


RANKERS = ("ours", "ours_fusion_only", "ours_embeddings", "embeddings_only", "bm25",
           "aider_repomap")


def baseline_scores(baseline: CodeBm25, text: str, gold: list[str],
                    span_paths: list[str] | None, budget: int) -> dict[str, float]:
    """BM25's scores for `text`, and whether whole files in its order within `budget` tokens
    hold every file of the gold spans (when the instance's spans could be located)."""
    ranked = baseline.rank(text)
    out = scores(ranked, gold)
    if span_paths is not None:
        included, used = set(), 0
        for path in ranked:
            cost = baseline.tokens_of[path]
            if used + cost <= budget:
                included.add(path)
                used += cost
        out["span_in_context_pct"] = float(all(p in included for p in span_paths))
    return out


def _baseline_from_mirror(baseline: CodeBm25, mirrors: Path, row: dict[str, Any],
                          entry: dict[str, Any], budget: int) -> dict[str, float]:
    """The BM25 baseline of a recorded instance again, from its base commit's objects."""
    mirror, why = mirror_of(mirrors, row)
    if why is not None:
        raise SystemExit(f"--rescore-baselines: {row['instance_id']}: {why}")
    baseline.index_commit(mirror, row["base_commit"])
    # The recorded run located the spans when it scored ours on them.
    located = "span_in_context_pct" in entry["ours"] and row["expected_spans"]
    return baseline_scores(baseline, row["problem_statement"], entry["gold"],
                           list(row["expected_spans"]) if located else None, budget)


def _write_details(path: Path | None, entry: dict[str, Any]) -> None:
    if path is not None:
        with path.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")


def shard(rows: list[dict[str, Any]], which: str) -> list[dict[str, Any]]:
    """The `which` ("I/N") block of each repository's rows, kept in their order."""
    i, n = (int(x) for x in which.split("/"))
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    out = []
    for repo_rows in by_repo.values():
        size = -(-len(repo_rows) // n)
        out.extend(repo_rows[(i - 1) * size:i * size])
    return out


def _per_repo(details: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean recall@5 of each ranker per repository (and the instance count)."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in details:
        by_repo[entry["repo"]].append(entry)
    table: dict[str, dict[str, float]] = {}
    for repo in sorted(by_repo):
        entries = by_repo[repo]
        table[repo] = {"instances": len(entries)}
        for name in RANKERS:
            values = [e[name]["recall_at_5"] for e in entries if name in e]
            if values:
                table[repo][name] = round(statistics.fmean(values), 4)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_options(parser)
    parser.add_argument("--limit", type=int, default=0, help="at most this many instances")
    parser.add_argument("--repo", action="append", default=[], help="only this owner/name")
    parser.add_argument("--instance", action="append", default=[],
                        help="only this instance id (repeatable)")
    parser.add_argument("--shard", default="1/1",
                        help="I/N: only the I-th of N consecutive blocks of each "
                             "repository's instances in commit order (runs in parallel, each "
                             "with its own --workdir and --details)")
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--no-aider", action="store_true")
    parser.add_argument("--embeddings", action="store_true",
                        help="also score ours fused with model2vec embeddings, and the "
                             "embeddings alone (needs the `embeddings` extra)")
    parser.add_argument("--workdir", type=Path, default=CACHE / "localize")
    parser.add_argument("--reuse-baselines", type=Path,
                        help="a --details file of an earlier run: take the BM25 and Aider "
                             "scores from it instead of recomputing them")
    parser.add_argument("--details", type=Path,
                        help="per-instance scores (JSON lines); a rerun resumes from it")
    parser.add_argument("--summary-only", action="store_true",
                        help="only summarise the --details file; count the instances it "
                             "lacks as not run")
    parser.add_argument("--rescore", action="store_true",
                        help="with --summary-only: score our ranking again by fusing the "
                             "recorded lists with this version's `rank.fuse` (exact when "
                             "only the fusion changed since the run)")
    parser.add_argument("--rescore-baselines", action="store_true",
                        help="with --rescore: compute the BM25 baseline again from each "
                             "base commit's files in the mirror (no checkout)")
    args = parser.parse_args()
    check_data_options(args)
    if args.embeddings and not embeddings.available():
        raise SystemExit("--embeddings needs model2vec and tokenlearn-static-model: "
                         "pip install -e '.[embeddings]'")

    rows = shard(in_commit_order(load_instances(args.instances, args.repo, args.limit, args.instance),
                                 args.mirrors), args.shard)

    os.environ.setdefault("CODELOOP_CACHE_DIR", str(CACHE / "index-cache"))
    # One checkout moves from commit to commit: re-tokenise only the files that changed.
    keep_tokens_between_rebuilds()
    counter = get_counter()
    aider = None if args.no_aider or args.summary_only else AiderMap()
    details: list[dict[str, Any]] = []
    ours_ms: list[float] = []
    ready_ms: list[float] = []
    embed_ms: list[float] = []
    skipped: dict[str, str] = {}
    not_run: list[str] = []
    index: RepoIndex | None = None
    baseline = CodeBm25(counter)
    current_repo = None
    reused: dict[str, dict[str, Any]] = {}
    if args.reuse_baselines is not None:
        for line in args.reuse_baselines.read_text().splitlines():
            entry = json.loads(line)
            reused[entry["instance"]] = entry
    done: dict[str, dict[str, Any]] = {}
    if args.details is not None and args.details.exists():
        for line in args.details.read_text().splitlines():
            entry = json.loads(line)
            done[entry["instance"]] = entry
    started_run = time.perf_counter()
    computed = 0
    try:
        for n, row in enumerate(rows, 1):
            iid = row["instance_id"]
            if iid in done:  # resumed run: scores and timings from the details file
                if args.rescore and "signals" in done[iid]:
                    done[iid].update(rescored(done[iid]))
                    if args.rescore_baselines:
                        done[iid]["bm25"] = _baseline_from_mirror(
                            baseline, args.mirrors, row, done[iid], args.budget)
                details.append(done[iid])
                if "rank_and_context_ms" in done[iid]:
                    ours_ms.append(done[iid]["rank_and_context_ms"])
                if "context_build_ms" in done[iid]:
                    ready_ms.append(done[iid]["context_build_ms"])
                if "embedding_rank_ms" in done[iid]:
                    embed_ms.append(done[iid]["embedding_rank_ms"])
                continue
            mirror, why = mirror_of(args.mirrors, row)
            if why is not None:
                skipped[iid] = why
                print(f"[{n}/{len(rows)}] {iid}: skipped ({skipped[iid]})", flush=True)
                continue
            if args.summary_only:
                not_run.append(iid)
                continue
            started = time.perf_counter()
            work = checkout(mirror, args.workdir / row["repo"].replace("/", "+"),
                            row["base_commit"])
            checkout_s = time.perf_counter() - started
            if row["repo"] != current_repo:
                if index is not None:
                    index.close()
                index = RepoIndex(work)
                current_repo = row["repo"]
            assert index is not None
            update = index.update()
            gold = gold_files(row["patch"])
            text = row["problem_statement"]
            spans = span_lines(index, row["expected_spans"]) if row["expected_spans"] else None
            scored: dict[str, dict[str, float]] = {}

            started = time.perf_counter()
            found = signals(index, text)
            fused = order(found, limit=LEXICAL_DEPTH)
            context = build_task_context(index, text, args.budget, counter)
            ours_ms.append((time.perf_counter() - started) * 1000)
            # The first build after a moved checkout also rebuilt the graph and the commit
            # index; a session's builds run on an index that has them, as this one does.
            started = time.perf_counter()
            build_task_context(index, text, args.budget, counter)
            ready_ms.append((time.perf_counter() - started) * 1000)
            ranked = [p for p, _ in fused[:50]]
            mine = scores(ranked, gold)
            if spans is not None:
                mine["span_in_context_pct"] = float(all(
                    (p, s) in context.repo_map.shown
                    or any(sn.path == p and sn.start_line <= s <= sn.end_line
                           for sn in context.snippets)
                    for p, s, _e in spans))
            scored["ours"] = mine
            scored["ours_fusion_only"] = scores([p for p, _ in fuse(found, limit=50)], gold)
            if args.embeddings:
                started = time.perf_counter()
                semantic = [p for p, _ in
                            embeddings.rank_files_semantic(index, text, LEXICAL_DEPTH)]
                embed_ms.append((time.perf_counter() - started) * 1000)
                scored["ours_embeddings"] = scores(
                    [p for p, _ in fuse_semantic(fused, semantic, 50)], gold)
                scored["embeddings_only"] = scores(semantic[:50], gold)

            paths = index.paths()
            earlier = reused.get(iid, {})
            if "bm25" in earlier and (aider is None or "aider_repomap" in earlier):
                scored["bm25"] = earlier["bm25"]
                if aider is not None:
                    scored["aider_repomap"] = earlier["aider_repomap"]
            else:
                baseline.index(work, paths)
                scored["bm25"] = baseline_scores(
                    baseline, text, gold, None if spans is None else [p for p, _s, _e in spans],
                    args.budget)
                if aider is not None:
                    listed = set(paths)
                    tracked = [f for f in git(["ls-files"], cwd=work).splitlines()
                               if f in listed]
                    out = aider.run(work, tracked, text, args.budget, render=spans is not None)
                    ad = scores(out["files"], gold)
                    if spans is not None:
                        ad["span_in_context_pct"] = float(
                            aider_span_in_map(out["map"], row["expected_spans"]))
                    scored["aider_repomap"] = ad
            computed += 1
            elapsed = time.perf_counter() - started_run
            left = elapsed / computed * (len(rows) - n)
            print(f"[{n}/{len(rows)}] {iid}: checkout {checkout_s:.1f}s, update "
                  f"{update.seconds:.1f}s ({update.touched} files) r@5 "
                  + " ".join(f"{k}={v['recall_at_5']:.2f}" for k, v in scored.items())
                  + f" | {elapsed / 60:.1f} min, ~{left / 60:.0f} min left", flush=True)
            entry = {"instance": iid, "repo": row["repo"], **scored,
                     "rank_and_context_ms": round(ours_ms[-1], 1),
                     "context_build_ms": round(ready_ms[-1], 1),
                     # Where a moved checkout's time goes: git, then re-analysing the files
                     # that differ between the two base commits.
                     "checkout_s": round(checkout_s, 2), "update_s": round(update.seconds, 2),
                     "files_touched": update.touched,
                     # What benchmarks/localize_tune.py replays other weights on.
                     "gold": gold, "signals": replayable(found, index)}
            if args.embeddings:
                entry["embedding_rank_ms"] = round(embed_ms[-1], 1)
            _write_details(args.details, entry)
            details.append(entry)
    finally:
        if aider is not None:
            aider.close()
        if index is not None:
            index.close()

    summaries = {name: summarise([d[name] for d in details if name in d]) for name in RANKERS}
    figures: dict[str, Any] = {
        **summaries["ours"],
        "rank_and_context_p50_ms": round(statistics.median(ours_ms), 1) if ours_ms else 0.0,
        "rank_and_context_p95_ms": (round(statistics.quantiles(ours_ms, n=20)[18], 1)
                                    if len(ours_ms) > 1 else 0.0),
        # The key: the task context (`session.context_feed`) built on a ready index,
        # over the instances whose run timed it (runs before 2026-11-26 did not).
        "context_build_p95_ms": (round(statistics.quantiles(ready_ms, n=20)[18], 1)
                                 if len(ready_ms) > 1 else None),
        "context_build_instances": len(ready_ms),
        # How far chance alone moves recall@5 (instances resampled).
        "recall_at_5_ci95": _interval([d["ours"]["recall_at_5"] for d in details
                                       if "ours" in d]),
        "skipped_instances": len(skipped),
        "skipped": skipped,
        "not_run_instances": len(not_run),
        "baselines": {"bm25": summaries["bm25"], "aider_repomap": summaries["aider_repomap"]},
        # Our fusion without the learnt reordering of its head (`rerank`).
        "fusion_only": summaries["ours_fusion_only"],
        "per_repository_recall_at_5": _per_repo(details),
        "halves": {half: {name: summarise([d[name] for d in details
                                           if name in d and half_of(d["instance"]) == half])
                          for name in ("ours", "ours_fusion_only", "bm25")}
                  for half in ("tune", "held_out")},
    }
    if args.embeddings:
        figures["with_embeddings"] = summaries["ours_embeddings"]
        figures["embeddings_only"] = summaries["embeddings_only"]
        figures["embedding_rank_p50_ms"] = (round(statistics.median(embed_ms), 1)
                                            if embed_ms else 0.0)
    for name, summary in summaries.items():
        if summary["instances"]:
            print(f"{name:>16}: " + "  ".join(f"{k}={v}" for k, v in summary.items()))
    for half, cells in figures["halves"].items():
        for name in ("ours", "ours_fusion_only"):
            print(f"{half + ' ' + name:>26}: "
                  + "  ".join(f"{k}={v}" for k, v in cells[name].items()))
    print(f"{'repository':<30} " + " ".join(f"{name:>16}" for name in RANKERS))
    for repo, cells in figures["per_repository_recall_at_5"].items():
        print(f"{repo:<30} " + " ".join(f"{cells.get(name, float('nan')):>16.3f}"
                                        for name in RANKERS) + f"  (n={cells['instances']})")
    print(json.dumps(figures))


if __name__ == "__main__":
    sys.exit(main())
