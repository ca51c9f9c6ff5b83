"""Localisation with and without the embedding tier, replayed without checkouts or indexes.

`localize.py --embeddings` needs a checkout and an index update per instance (minutes on
sympy). This replays the semantic ranking of `embeddings.rank_files_semantic` from the
mirrors instead: each instance's files come from `git ls-tree` at its base commit (the
walker's name, folder and size rules), are cut by the index's own `analyse` and embedded by
`embeddings.encode` (cached by blob, so neighbouring commits embed only what changed), and
each file scores its best chunk's cosine to the issue text, both centred on the mean chunk
vector. Our ranking is replayed from a `localize.py --details` file (`rank.order` over the
recorded lists), and both are scored: ours, ours fused with the semantic ranking at several
weights (`rank.fuse_semantic`), and the embeddings alone, on the `tune` and `held_out`
halves. `--sample F` takes about a fraction F of each repository's instances, evenly spaced
in commit order (all of a repository with five or fewer).

    PYTHONPATH=src:benchmarks python benchmarks/localize_embeddings.py \
        --instances DATA/instances.jsonl --mirrors MIRRORS --details all.jsonl \
        --semantic OUT/semantic.jsonl --sample 0.37
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from localize_replay import half_of, load_signals, scores
from swebench_repos import add_data_options, check_data_options, mirror_of

from codeloop.index import embeddings
from codeloop.index.analyse import analyse, decode
from codeloop.index.rank import LEXICAL_DEPTH, SEMANTIC_WEIGHT, fuse_semantic, order
from codeloop.index.walker import MAX_FILE_BYTES, SKIP_DIRS, skipped_by_name

WEIGHTS = (0.0, 0.25, 0.5, SEMANTIC_WEIGHT, 2.0)
CHUNK_CHARS = 2_000  # as `embeddings._CHUNK_CHARS`: the model reads at most 512 tokens


def spaced(items: list[Any], fraction: float) -> list[Any]:
    """About `fraction` of `items`, evenly spaced (first and last kept; all if five or fewer)."""
    n = len(items)
    k = n if n <= 5 else max(5, round(n * fraction))
    return [items[i] for i in sorted({round(i * (n - 1) / max(k - 1, 1)) for i in range(k)})]


def tree_files(mirror: Path, commit: str) -> list[tuple[str, str]]:
    """(path, blob) of the files at `commit` the index would read."""
    listing = subprocess.run(["git", f"--git-dir={mirror}", "ls-tree", "-r", "-l", "-z", commit],
                             capture_output=True, check=True).stdout
    out = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, raw = record.split(b"\t", 1)
        mode, kind, blob, size = meta.split()
        path = raw.decode()
        # A mirror may lack its largest blobs: ls-tree prints no size for them.
        if kind != b"blob" or mode == b"120000" or not size.isdigit() \
                or int(size) > MAX_FILE_BYTES:
            continue
        if any(p in SKIP_DIRS for p in path.split("/")[:-1]) or skipped_by_name(path):
            continue
        out.append((path, blob.decode()))
    return out


class Semantic:
    """The semantic file ranking of one repository's commits, chunk vectors cached by blob."""

    def __init__(self, mirror: Path) -> None:
        self.mirror = mirror
        self.cat = subprocess.Popen(["git", f"--git-dir={mirror}", "cat-file", "--batch"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.vectors: dict[str, np.ndarray | None] = {}

    def _read(self, blob: str) -> bytes | None:
        assert self.cat.stdin is not None and self.cat.stdout is not None
        self.cat.stdin.write(blob.encode() + b"\n")
        self.cat.stdin.flush()
        header = self.cat.stdout.readline().split()
        if header[1] == b"missing":
            return None
        data = self.cat.stdout.read(int(header[2]))
        self.cat.stdout.read(1)
        return data

    def rank(self, commit: str, text: str, limit: int) -> tuple[list[str], int]:
        """The first `limit` files by best-chunk similarity, and how many chunks were new."""
        files = tree_files(self.mirror, commit)
        texts: list[str] = []
        owners: list[tuple[str, int]] = []
        for path, blob in files:
            if blob in self.vectors:
                continue
            data = self._read(blob)
            found = analyse(path, data) if data is not None else None
            if data is None or found is None or not found.indexed or not found.chunks:
                self.vectors[blob] = None
                continue
            lines = decode(data).splitlines()
            chunk_texts = [(path + "\n" + "\n".join(lines[c.start_line - 1:c.end_line]))
                           [:CHUNK_CHARS] for c in found.chunks]
            texts.extend(chunk_texts)
            owners.append((blob, len(chunk_texts)))
        if texts:
            encoded = embeddings.encode(texts)
            at = 0
            for blob, count in owners:
                self.vectors[blob] = encoded[at:at + count]
                at += count
        kept = [(p, v) for p, b in files if (v := self.vectors.get(b)) is not None]
        stacked = np.vstack([v for _p, v in kept])
        starts = np.concatenate([[0], np.cumsum([len(v) for _p, v in kept])[:-1]])
        mean = stacked.mean(axis=0).astype(np.float32)
        query = embeddings._unit(embeddings.encode([text])[0] - mean)
        best = np.maximum.reduceat(embeddings._unit(stacked - mean) @ query,
                                   starts.astype(np.intp))
        return [kept[i][0] for i in np.argsort(-best, kind="stable")[:limit]], len(texts)

    def close(self) -> None:
        assert self.cat.stdin is not None
        self.cat.stdin.close()
        self.cat.wait()


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = ("recall_at_1", "recall_at_5", "recall_at_10", "mrr")
    return {"instances": len(rows),
            **{k: round(statistics.fmean(r[k] for r in rows), 4) if rows else 0.0
               for k in keys}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_options(parser)
    parser.add_argument("--details", type=Path, required=True,
                        help="a localize.py --details file: our ranking and the gold files")
    parser.add_argument("--semantic", type=Path, required=True,
                        help="the semantic rankings (JSON lines); a rerun resumes from it")
    parser.add_argument("--sample", type=float, default=1.0)
    parser.add_argument("--repo", action="append", default=[], help="only this owner/name")
    args = parser.parse_args()
    check_data_options(args)
    if not embeddings.available():
        raise SystemExit("needs model2vec and tokenlearn-static-model: "
                         "pip install -e '.[embeddings]'")
    issues = {r["instance_id"]: r for r in map(json.loads, args.instances.read_text().splitlines())}
    entries = [e for e in map(json.loads, args.details.read_text().splitlines())
               if "signals" in e and e.get("gold") and e["instance"] in issues
               and (not args.repo or e["repo"] in args.repo)]
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:  # details files list each repository's instances in commit order
        by_repo[entry["repo"]].append(entry)
    done: dict[str, list[str]] = {}
    if args.semantic.exists():
        for line in args.semantic.read_text().splitlines():
            row = json.loads(line)
            done[row["instance"]] = row["semantic"]
    picked = [e for repo in by_repo for e in spaced(by_repo[repo], args.sample)]
    for repo in by_repo:
        todo = [e for e in spaced(by_repo[repo], args.sample) if e["instance"] not in done]
        if not todo:
            continue
        mirror, why = mirror_of(args.mirrors, issues[todo[0]["instance"]])
        if why is not None:
            print(f"{repo}: skipped ({why})", flush=True)
            continue
        ranker = Semantic(mirror)
        try:
            for entry in todo:
                issue = issues[entry["instance"]]
                started = time.perf_counter()
                ranked, new = ranker.rank(issue["base_commit"], issue["problem_statement"],
                                          LEXICAL_DEPTH)
                seconds = round(time.perf_counter() - started, 1)
                done[entry["instance"]] = ranked
                with args.semantic.open("a") as fh:
                    fh.write(json.dumps({"instance": entry["instance"], "semantic": ranked,
                                         "encoded": new, "seconds": seconds}) + "\n")
                print(f"{entry['instance']}: {new} chunks embedded, {seconds}s", flush=True)
        finally:
            ranker.close()

    scored = [e for e in picked if e["instance"] in done]
    results: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for entry in scored:
        ours = order(load_signals(entry), limit=LEXICAL_DEPTH)
        semantic = done[entry["instance"]]
        half = half_of(entry["instance"])
        rankings = {"ours": [p for p, _ in ours[:50]], "embeddings_only": semantic[:50]}
        for weight in WEIGHTS[1:]:
            rankings[f"fused_{weight}"] = [p for p, _ in fuse_semantic(ours, semantic, 50,
                                                                       weight=weight)]
        for name, ranked in rankings.items():
            figures = scores(ranked, entry["gold"])
            results[name]["all"].append(figures)
            results[name][half].append(figures)
    table = {name: {part: summary(rows) for part, rows in parts.items()}
             for name, parts in results.items()}
    for name, parts in table.items():
        for part in ("all", "tune", "held_out"):
            cells = parts.get(part, {})
            print(f"{name:>16} {part:>9}: " + "  ".join(f"{k}={v}" for k, v in cells.items()))
    print(json.dumps({"instances": len(scored), "repositories": len({e["repo"] for e in scored}),
                      "shipped_weight": SEMANTIC_WEIGHT, "rankers": table}))


if __name__ == "__main__":
    main()
