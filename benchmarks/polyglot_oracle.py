"""The oracle on the polyglot exercises (Exercism, six languages) through `eval run`'s pipeline.

Each exercise becomes a generic suite task (codeloop.eval.suite.polyglot): the agent's copy
has no `.meta/`; the oracle applies the reference solution through the agent's tools; the
judge puts the tests back and runs them in the sandbox with the track's own runner, parsed
per test. Prints per language: exercises, whether the toolchain is present, oracle passed,
per-test parse rate, median and p95 seconds per exercise; the last line is JSON with
`exercises`, `passed_pct`, `languages` (language -> passed_pct) and `seconds` (language ->
median and p95 wall seconds per exercise).

    PYTHONPATH=src python benchmarks/polyglot_oracle.py --mirrors MIRRORS [--language go]
        [--limit N] [--workers 2] [--out records.jsonl] [--toolchains DIR]

With --out the run resumes: exercises the file already records are counted, not rerun.

MIRRORS holds the fetched repository as `MIRRORS/Aider-AI+polyglot-benchmark/repo` (bare).
The toolchains are installed before the run, once (nothing is downloaded during it):

    benchmarks/polyglot_setup.sh [DIR]

installs Debian's Go, Rust, C++ and Java toolchains (JUnit 5 and AssertJ from Debian; the
Java tests run with javac and JUnit's console launcher) and, into DIR, jest with babel and
jest-junit from the npm registry (pinned by benchmarks/polyglot/javascript/package-lock.json).
DIR defaults to $CODELOOP_POLYGLOT_TOOLCHAINS, else <codeloop cache>/polyglot-toolchains;
pass the same DIR as --toolchains. A track whose toolchain is missing says what is missing.

Exercises that need packages from the network (Rust crates; Java libraries Debian lacks:
hangman's RxJava) are reported as not runnable offline and left out of the pass rate, as
are tracks without a toolchain.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codeloop.config import Settings
from codeloop.eval.suite.polyglot import exercise_task, needs_network, toolchain_missing
from codeloop.eval.suite.polyglot_runners import LANGUAGES, default_toolchains
from codeloop.eval.suite.run import SuiteRun, run_suite
from codeloop.eval.suite.tasks import SuiteTask
from codeloop.workspace.safe_git import git

MIRROR_NAME = "Aider-AI+polyglot-benchmark"


def extract(mirror: Path, dest: Path) -> None:
    """The mirror's HEAD as files in `dest` (a bare mirror has no work tree)."""
    archive = git(["archive", "--format=tar", "HEAD"], git_dir=mirror).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True,
                        help=f"directory holding {MIRROR_NAME}/repo")
    parser.add_argument("--language", action="append", choices=sorted(LANGUAGES), default=None)
    parser.add_argument("--limit", type=int, default=None, help="exercises per language")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="write the records (JSONL)")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--toolchains", type=Path, default=None,
                        help="where benchmarks/polyglot_setup.sh installed the JavaScript runner "
                             "(default $CODELOOP_POLYGLOT_TOOLCHAINS or the codeloop cache)")
    args = parser.parse_args()
    toolchains = args.toolchains or default_toolchains()
    mirror = args.mirrors / MIRROR_NAME / "repo"
    if not (mirror / "HEAD").is_file():
        parser.error(f"no bare mirror at {mirror} (fetch Aider-AI/polyglot-benchmark there)")
    if args.work_dir is not None:
        args.work_dir.mkdir(parents=True, exist_ok=True)
    languages = args.language or sorted(LANGUAGES)
    rows: dict[str, dict[str, object]] = {}
    tasks: list[SuiteTask] = []
    offline: dict[str, int] = defaultdict(int)
    with tempfile.TemporaryDirectory(prefix="polyglot-", dir=args.work_dir) as tmp:
        root = Path(tmp) / "src"
        extract(mirror, root)
        for language in languages:
            exercises = sorted((root / language / "exercises" / "practice").iterdir())
            missing = toolchain_missing(language, toolchains)
            rows[language] = {"exercises": len(exercises), "toolchain": not missing,
                              "missing": missing}
            if missing:
                continue
            for exercise in exercises[: args.limit]:
                if needs_network(exercise, language):
                    offline[language] += 1
                    continue
                tasks.append(exercise_task(exercise, language,
                                           Path(tmp) / "tasks" / language / exercise.name,
                                           toolchains=toolchains))
        run = SuiteRun("oracle", Settings(), args.work_dir)
        wanted = {t.id for t in tasks}
        # A run with --out resumes: exercises the file already records are not run again.
        done = [r for r in previous(args.out) if r["instance_id"] in wanted]
        by_lang: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in done:
            by_lang[record["language"]].append(record)
        skip = {r["instance_id"] for r in done}
        sink = args.out.open("a", encoding="utf-8") if args.out else None
        for result in run_suite(interleave(tasks), run, workers=args.workers, skip=skip):
            record = result.to_json()
            by_lang[result.language].append(record)
            if sink:
                sink.write(json.dumps(record) + "\n")
                sink.flush()
            mark = "ok  " if result.outcome == "resolved" else "FAIL"
            print(f"{mark} {result.instance_id} {result.wall_s:.0f}s {result.reason[:100]}",
                  flush=True)
        if sink:
            sink.close()
    summary: dict[str, float] = {}
    seconds: dict[str, dict[str, float]] = {}
    total = passed = 0
    print(f"\n{'language':<11} {'exercises':>9} {'toolchain':>9} {'run':>4} {'offline':>7} "
          f"{'passed':>6} {'pass %':>6} {'per-test %':>10} {'median s':>8} {'p95 s':>6}")
    for language in languages:
        results = by_lang.get(language, [])
        ran, ok = len(results), sum(r["outcome"] == "resolved" for r in results)
        parsed = sum(bool(r["per_test"]) for r in results)
        pct = round(100 * ok / ran, 1) if ran else 0.0
        total, passed = total + ran, passed + ok
        row = rows[language]
        times = timing([r["wall_s"] for r in results])
        print(f"{language:<11} {row['exercises']:>9} {'yes' if row['toolchain'] else 'no':>9} "
              f"{ran:>4} {offline[language]:>7} {ok:>6} {pct:>6} "
              f"{round(100 * parsed / ran, 1) if ran else 0.0:>10} "
              f"{times.get('median', ''):>8} {times.get('p95', ''):>6}"
              + ("" if row["toolchain"] else f"   missing: {', '.join(row['missing'])}"))
        if ran:
            summary[language], seconds[language] = pct, times
    print(json.dumps({"exercises": total, "passed_pct": round(100 * passed / total, 1) if total else 0.0,
                      "languages": summary, "seconds": seconds}))


def previous(out: Path | None) -> list[dict[str, Any]]:
    """The records an earlier run wrote to `out` (the last one per exercise)."""
    if out is None or not out.is_file():
        return []
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    return list({r["instance_id"]: r for r in records}.values())


def interleave(tasks: list[SuiteTask]) -> list[SuiteTask]:
    """One exercise of each language in turn, so a run stopped early covers every language."""
    queues: dict[str, list[SuiteTask]] = defaultdict(list)
    for task in tasks:
        queues[task.language].append(task)
    return [q[i] for i in range(max(map(len, queues.values()), default=0))
            for q in queues.values() if i < len(q)]


def timing(walls: list[float]) -> dict[str, float]:
    """Median and 95th percentile (nearest rank) of the per-exercise wall times."""
    if not walls:
        return {}
    ranked = sorted(walls)
    p95 = ranked[min(len(ranked) - 1, max(0, -(-95 * len(ranked) // 100) - 1))]
    return {"median": round(statistics.median(ranked), 1), "p95": round(p95, 1)}


if __name__ == "__main__":
    main()
