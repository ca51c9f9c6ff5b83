"""The oracle on the polyglot exercises (Exercism, six languages) through `eval run`'s pipeline.

Each exercise becomes a generic suite task (codeloop.eval.suite.polyglot): the agent's copy
has no `.meta/`; the oracle applies the reference solution through the agent's tools; the
judge puts the tests back and runs them in the sandbox with the track's own runner, parsed
per test. Prints per language: exercises, whether the toolchain is present, oracle passed,
per-test parse rate; the last line is JSON with `exercises`, `passed_pct`, `languages`.

    PYTHONPATH=src python benchmarks/polyglot_oracle.py --mirrors MIRRORS [--language go]
        [--limit N] [--workers 2] [--out records.jsonl]

MIRRORS holds the fetched repository as `MIRRORS/Aider-AI+polyglot-benchmark/repo` (bare).
Toolchains come from Debian packages, installed before the run (nothing is downloaded then):

    apt-get install -y golang-go cargo cmake g++ make          # Go, Rust, C++; Python is there
    # JavaScript needs jest + jest-junit on the sandbox's PATH; Java needs gradle with its
    # dependencies cached offline: without them those tracks report "toolchain missing".

Rust exercises whose Cargo.toml has dependencies need crates from the network: they are
reported as not runnable offline and left out of the pass rate, as are tracks without a
toolchain.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from codeloop.config import Settings
from codeloop.eval.suite.polyglot import (
    LANGUAGES,
    exercise_task,
    needs_network,
    toolchain_missing,
)
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
    args = parser.parse_args()
    mirror = args.mirrors / MIRROR_NAME / "repo"
    if not (mirror / "HEAD").is_file():
        parser.error(f"no bare mirror at {mirror} (fetch Aider-AI/polyglot-benchmark there)")
    languages = args.language or sorted(LANGUAGES)
    rows: dict[str, dict[str, object]] = {}
    tasks: list[SuiteTask] = []
    offline: dict[str, int] = defaultdict(int)
    with tempfile.TemporaryDirectory(prefix="polyglot-", dir=args.work_dir) as tmp:
        root = Path(tmp) / "src"
        extract(mirror, root)
        for language in languages:
            exercises = sorted((root / language / "exercises" / "practice").iterdir())
            missing = toolchain_missing(language)
            rows[language] = {"exercises": len(exercises), "toolchain": not missing,
                              "missing": missing}
            if missing:
                continue
            for exercise in exercises[: args.limit]:
                if needs_network(exercise, language):
                    offline[language] += 1
                    continue
                tasks.append(exercise_task(exercise, language,
                                           Path(tmp) / "tasks" / language / exercise.name))
        run = SuiteRun("oracle", Settings(), args.work_dir)
        by_lang: dict[str, list] = defaultdict(list)
        sink = args.out.open("w", encoding="utf-8") if args.out else None
        for result in run_suite(tasks, run, workers=args.workers):
            by_lang[result.language].append(result)
            if sink:
                sink.write(json.dumps(result.to_json()) + "\n")
            mark = "ok  " if result.outcome == "resolved" else "FAIL"
            print(f"{mark} {result.instance_id} {result.reason[:100]}", flush=True)
        if sink:
            sink.close()
    summary: dict[str, float] = {}
    total = passed = 0
    print(f"\n{'language':<11} {'exercises':>9} {'toolchain':>9} {'run':>4} {'offline':>7} "
          f"{'passed':>6} {'pass %':>6} {'per-test %':>10}")
    for language in languages:
        results = by_lang.get(language, [])
        ran, ok = len(results), sum(r.outcome == "resolved" for r in results)
        parsed = sum(r.per_test for r in results)
        pct = round(100 * ok / ran, 1) if ran else 0.0
        total, passed = total + ran, passed + ok
        row = rows[language]
        print(f"{language:<11} {row['exercises']:>9} {'yes' if row['toolchain'] else 'no':>9} "
              f"{ran:>4} {offline[language]:>7} {ok:>6} {pct:>6} "
              f"{round(100 * parsed / ran, 1) if ran else 0.0:>10}"
              + ("" if row["toolchain"] else f"   missing: {', '.join(row['missing'])}"))
        if ran:
            summary[language] = pct
    print(json.dumps({"exercises": total, "passed_pct": round(100 * passed / total, 1) if total else 0.0,
                      "languages": summary}))


if __name__ == "__main__":
    main()
