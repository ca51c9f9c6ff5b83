"""Benchmark: apply real edits (SWE-bench gold hunks), perturbed the ways models err.

Each gold hunk becomes a case per format (edit_file, SEARCH/REPLACE, unified diff, patch
envelope) and per perturbation. The expected file is what `git apply` of the gold hunk
produces. Outcomes: correct (the result equals it byte for byte, so a difference in
whitespace alone is wrong), refused, wrong. A case is ambiguous when its search text,
under the normalisation its perturbation needs, fits several places and no line number or
anchor picks one, or when a lost blank line leaves the edit meaning several files (see
edit_ws_perturb.py) -- those must be refused. Aider's and OpenHands' editors run the
SEARCH/REPLACE cases in their own venvs for comparison.

    PYTHONPATH=src python benchmarks/edit_apply.py [--limit N] [--no-peers] [--only P,...]
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from codeloop.edit.apply import plan
from codeloop.edit.errors import EditError
from codeloop.edit.formats import parse_patch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from edit_cases import (
    FORMATS,
    PATH,
    PERTURBATIONS,
    WHITESPACE,
    Case,
    Hunk,
    build_cases,
    cached_hunks,
    ops_for,
    render,
    sides,
)
from peer_venvs import venv_python

# --- running -----------------------------------------------------------------------------


def run_ours(cases: list[Case], repeat: int = 1) -> None:
    """Apply every case; its latency is the fastest of `repeat` runs (load on a shared
    machine only ever adds time)."""
    for case in cases:
        data = ("\n".join(case.hunk.base) + ("\n" if case.hunk.trailing_nl else "")).encode()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            try:
                changes = plan(ops_for(case), lambda _p, d=data: d)  # type: ignore[misc]
            except EditError:
                changes = None
            times.append((time.perf_counter() - start) * 1000)
        case.ms = min(times)
        if changes is None:
            case.outcome = "refused"
        else:
            # Byte for byte: whitespace the engine changed uninvited makes a result wrong.
            after = changes[0].after if changes else data
            case.outcome = "correct" if after == case.hunk.expected.encode() else "wrong"


def run_peer(peer: str, cases: list[Case]) -> None:
    python = venv_python(peer)
    sr = [c for c in cases if c.fmt == "search_replace"]
    files: dict[str, str] = {}
    jobs = []
    for c in sr:
        files.setdefault(c.hunk.file_id, "\n".join(c.hunk.base) + ("\n" if c.hunk.trailing_nl else ""))
        old, new = sides(c.body)
        jobs.append([c.hunk.file_id, old, new])
    worker = Path(__file__).resolve().parent / "edit_peer_worker.py"
    done = subprocess.run([str(python), str(worker)], input=json.dumps(
        {"peer": peer, "files": files, "cases": jobs}), capture_output=True, text=True, check=True)
    for c, (status, digest, _ms) in zip(sr, json.loads(done.stdout), strict=True):
        if status == "refused":
            c.peers[peer] = "refused"
        else:
            ok = digest == hashlib.sha256(c.hunk.expected.encode()).hexdigest()
            c.peers[peer] = "correct" if ok else "wrong"


def diff500_ms(hunks: list[Hunk], lines: int = 2000) -> tuple[float, int]:
    """Apply one generated unified diff of about 500 lines to a base file of about `lines` lines.

    Returns the fastest of 9 runs (as for case latency: load only adds time) and the file's
    line count.
    """
    big = [h.base for h in hunks if len(h.base) >= lines]
    base = min(big, key=len) if big else max((h.base for h in hunks), key=len)
    every = 2
    while True:
        changed = [x + "  # edited" if i % every == 0 and x.strip() else x for i, x in enumerate(base)]
        diff = list(difflib.unified_diff([x + "\n" for x in base], [x + "\n" for x in changed],
                                         f"a/{PATH}", f"b/{PATH}"))
        if len(diff) <= 520 or every > len(base):
            break
        every += 1
    patch = "".join(diff)
    data = ("\n".join(base) + "\n").encode()
    times = []
    for _ in range(9):
        t0 = time.perf_counter()
        plan(parse_patch(patch), lambda _p: data)
        times.append((time.perf_counter() - t0) * 1000)
    return min(times), len(base)


# --- reporting ---------------------------------------------------------------------------


def _pct(n: int, d: int) -> float:
    return round(100.0 * n / d, 2) if d else 0.0


def report(cases: list[Case], peers: list[str]) -> dict[str, object]:
    rows: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for c in cases:
        for key in ((c.fmt, c.pert), (c.fmt, "ALL"), ("ALL", c.pert)):
            r = rows[key]
            r["cases"] += 1
            if c.ambiguous:
                r["ambiguous"] += 1
                r["guessed" if c.outcome != "refused" else "amb_refused"] += 1
                if c.outcome == "wrong":
                    r["wrong"] += 1
            else:
                r[c.outcome] += 1
            for p, o in c.peers.items():
                if not c.ambiguous:
                    r[f"{p}_{o}"] += 1
                elif o == "wrong":
                    r[f"{p}_wrong"] += 1
    head = f"{'format':<15}{'perturbation':<20}{'cases':>7}{'ambig':>7}{'correct%':>10}{'refused':>9}{'wrong':>7}{'guessed':>9}"
    head += "".join(f"{p + '%':>12}{p[:5] + '-wr':>10}" for p in peers)
    print(head)
    for fmt in (*FORMATS, "ALL"):
        for pert in (*PERTURBATIONS, "ALL"):
            r = rows.get((fmt, pert))
            if not r:
                continue
            unamb = r["cases"] - r["ambiguous"]
            line = (f"{fmt:<15}{pert:<20}{r['cases']:>7}{r['ambiguous']:>7}"
                    f"{_pct(r['correct'], unamb):>10.2f}{r['refused']:>9}{r['wrong']:>7}{r['guessed']:>9}")
            if fmt == "search_replace":
                line += "".join(f"{_pct(r[p + '_correct'], unamb):>12.2f}{r[p + '_wrong']:>10}" for p in peers)
            print(line)
        print()
    unamb = [c for c in cases if not c.ambiguous]
    ws = [c for c in unamb if c.pert in WHITESPACE]
    times = sorted(c.ms for c in cases)
    peer_out = {}
    sr = [c for c in unamb if c.fmt == "search_replace"]
    for p in peers:
        peer_out[p] = {
            "correct_pct": _pct(sum(c.peers.get(p) == "correct" for c in sr), len(sr)),
            "wrong": sum(c.peers.get(p) == "wrong" for c in cases if c.fmt == "search_replace"),
        }
    ours_sr = _pct(sum(c.outcome == "correct" for c in sr), len(sr))
    print(f"SEARCH/REPLACE, unambiguous: codeloop {ours_sr}% correct; "
          + "; ".join(f"{p} {v['correct_pct']}% correct, {v['wrong']} wrong" for p, v in peer_out.items()))
    by_pert = {pert: {k: rows[("ALL", pert)][k]
                      for k in ("cases", "ambiguous", "correct", "refused", "wrong", "guessed")}
               for pert in PERTURBATIONS if ("ALL", pert) in rows}
    return {
        "cases": len(cases),
        "ambiguous": len(cases) - len(unamb),
        "correct_pct": _pct(sum(c.outcome == "correct" for c in unamb), len(unamb)),
        "correct_pct_exact_ws": _pct(sum(c.outcome == "correct" for c in ws), len(ws)),
        "wrong": sum(c.outcome == "wrong" for c in cases),
        "guessed": sum(c.ambiguous and c.outcome != "refused" for c in cases),
        "apply_p50_ms": round(statistics.median(times), 3) if times else 0.0,
        "apply_p95_ms": round(times[int(0.95 * (len(times) - 1))], 3) if times else 0.0,
        "peers": peer_out,
        "perturbations": by_pert,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=Path, required=True, help="SWE-bench instances JSONL")
    ap.add_argument("--mirrors", type=Path, required=True, help="bare mirrors, OWNER+NAME/repo")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N instances")
    ap.add_argument("--no-peers", action="store_true", help="skip Aider and OpenHands")
    ap.add_argument("--show", type=int, default=0, help="print up to N failing cases")
    ap.add_argument("--repeat", type=int, default=2, help="time each case this many times (min)")
    ap.add_argument("--only", default="", help="comma-separated perturbations to run (default all)")
    args = ap.parse_args()
    if not args.instances.is_file():
        ap.error(f"--instances {args.instances}: no such file")
    if not args.mirrors.is_dir():
        ap.error(f"--mirrors {args.mirrors}: no such directory")
    perts = tuple(args.only.split(",")) if args.only else PERTURBATIONS
    if unknown := set(perts) - set(PERTURBATIONS):
        ap.error(f"unknown perturbations: {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    hunks, skipped = cached_hunks(args.instances, args.mirrors, args.limit)
    cases = build_cases(hunks, perts)
    print(f"{len(hunks)} hunks, {len(cases)} cases ({time.perf_counter() - t0:.1f}s to build); "
          f"skipped: {dict(skipped)}", flush=True)
    run_ours(cases, args.repeat)
    peers = [] if args.no_peers else ["aider", "openhands"]
    for p in peers:
        run_peer(p, cases)
    shown = 0
    for c in cases:
        bad = c.outcome == "wrong" or (c.ambiguous and c.outcome != "refused") or (
            not c.ambiguous and c.outcome == "refused")
        if bad and shown < args.show:
            shown += 1
            print(f"--- {c.outcome} amb={c.ambiguous} {c.fmt}/{c.pert} {c.hunk.file_id}@{c.hunk.start}")
            print(render(c) if c.fmt != "edit_file" else sides(c.body)[0])
    summary = report(cases, peers)
    d500, d500_lines = diff500_ms(hunks) if hunks else (0.0, 0)
    summary["diff500_ms"] = round(d500, 3)
    print(f"apply p50 {summary['apply_p50_ms']} ms, p95 {summary['apply_p95_ms']} ms; "
          f"500-line diff on a {d500_lines}-line file {summary['diff500_ms']} ms")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
