"""Policy benchmark: decision latency, shell-splitting cost, hook overhead, output-scan
throughput and the injection scanner's false-positive rate on real repositories, and the
secret redactor's speed (on those files and on one 5 MB output) and what it hides in them.

    PYTHONPATH=src python benchmarks/policy.py [--repos flask,requests] [--max-files N]

Real repositories are read from the bare mirrors under --mirrors DIR (skipped with a note if
absent). The last output line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from swebench_repos import blobs_at, read_blobs

from codeloop.policy.engine import PolicyEngine
from codeloop.policy.injection import scan
from codeloop.policy.redact import Redactor
from codeloop.policy.scrub import scrub
from codeloop.policy.shell import analyse

DEFAULT_REPOS = ("pallets+flask,psf+requests,pytest-dev+pytest,sphinx-doc+sphinx,"
                 "marshmallow-code+marshmallow,pylint-dev+astroid,pylint-dev+pylint,"
                 "sqlfluff+sqlfluff,pydata+xarray,mwaskom+seaborn")
TEXT_SUFFIXES = (".py", ".md", ".rst", ".txt", ".cfg", ".toml", ".yml", ".yaml", ".json", ".ini",
                 ".html")
COMMANDS = [
    "pytest -q tests/test_app.py -k 'not slow'",
    "python -m pytest -x --tb=short 2>&1 | tail -n 50",
    "npm test && npm run lint",
    "git diff HEAD~1 -- src/ | head -200",
    "for f in src/*.py; do python -m py_compile \"$f\"; done",
    "cd build && cmake .. && make -j2",
    "env CI=1 timeout 600 tox -e py311",
    "bash -c 'ruff check src && mypy src'",
    "grep -rn TODO src | sort | uniq -c | sort -rn | head",
    "cat <<EOF > conf.ini\n[x]\nk = $(date +%s)\nEOF",
]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def repo_texts(mirrors: Path, name: str, max_files: int) -> Iterator[tuple[str, str]]:
    """(path, text) of the first `max_files` text files at the mirror's HEAD."""
    git = mirrors / name / "repo"
    listed = [(path, blob) for path, blob in blobs_at(git, "HEAD").items()
              if path.endswith(TEXT_SUFFIXES)][:max_files]
    data = read_blobs(git, [blob for _, blob in listed])
    for path, blob in listed:
        if blob in data:  # a mirror may lack its largest blobs
            yield path, data[blob].decode("utf-8", "replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirrors", type=Path, required=True,
                        help="bare mirrors laid out OWNER+NAME/repo")
    parser.add_argument("--repos", default=DEFAULT_REPOS)
    parser.add_argument("--max-files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    # Each shell command is timed a tenth as often as the one edit decision, never 0 times.
    per_command = max(1, args.repeat // 10)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        engine = PolicyEngine.from_config({
            "permissions": {
                "allow": ["run(pytest *)", "run(python -m pytest *)", "run(npm test)",
                          "run(npm run lint)", "edit(src/**)", "run(git diff *)"],
                "ask": ["run(git push *)"],
                "deny": ["run(curl *)", "run(wget *)", "read(./.env)", "edit(.git/**)"],
            },
            "approval_mode": "auto-edit",
        })

        split = [s for c in COMMANDS for s in timed(lambda c=c: analyse(c), per_command)]
        split_p50, split_p95 = percentiles(split)
        print(f"shell split: median {split_p50 * 1e6:.1f} us, p95 {split_p95 * 1e6:.1f} us "
              f"({len(COMMANDS)} commands)")

        decide = [s for c in COMMANDS for s in timed(
            lambda c=c: engine.decide("run", "execute", {"command": c}, False, root, "b"),
            per_command)]
        decide += timed(lambda: engine.decide("edit_file", "write", {"path": "src/a.py"}, False,
                                              root, "b"), args.repeat)
        dec_p50, dec_p95 = percentiles(decide)
        print(f"decide (rules, no hooks): median {dec_p50 * 1e6:.1f} us, p95 {dec_p95 * 1e6:.1f} us")

        script = root / "hook.py"
        script.write_text("import sys, json\njson.load(sys.stdin)\nprint('{}')\n")
        hooked = PolicyEngine.from_config({
            "hooks": [{"event": "pre_tool", "command": f"{sys.executable} {script}"}],
            "approval_mode": "full-auto"})
        hook_times = timed(lambda: hooked.decide("run", "execute", {"command": "pytest"}, False,
                                                 root, "b"), 30)
        hook_p50, hook_p95 = percentiles(hook_times)
        print(f"decide with one Python pre-hook: median {hook_p50 * 1e3:.1f} ms, "
              f"p95 {hook_p95 * 1e3:.1f} ms")
        shell_hooked = PolicyEngine.from_config({
            "hooks": [{"event": "pre_tool", "command": "cat >/dev/null"}],
            "approval_mode": "full-auto"})
        sh_times = timed(lambda: shell_hooked.decide("run", "execute", {"command": "pytest"}, False,
                                                     root, "b"), 30)
        sh_p50, sh_p95 = percentiles(sh_times)
        print(f"decide with one `cat >/dev/null` pre-hook: median {sh_p50 * 1e3:.1f} ms, "
              f"p95 {sh_p95 * 1e3:.1f} ms")

    total_bytes = 0
    files = flagged = suspicious = redacted = 0
    scan_seconds = redact_seconds = 0.0
    flagged_paths: list[str] = []
    redacted_paths: list[str] = []
    redactor = Redactor.from_environment({"MY_API_TOKEN": "tok-0123456789abcdef"})
    sample: list[str] = []  # the first 5 MB of text, for one output that large
    for name in args.repos.split(","):
        if not (args.mirrors / name / "repo").exists():
            print(f"note: mirror {name} not present; skipped")
            continue
        for path, text in repo_texts(args.mirrors, name, args.max_files):
            start = time.perf_counter()
            cleaned = scrub(text)
            found = scan(cleaned.text)
            scan_seconds += time.perf_counter() - start
            files += 1
            total_bytes += len(text.encode())
            suspicious += cleaned.suspicious
            if found:
                flagged += 1
                flagged_paths.append(f"{name}:{path} ({found[0].kind}: {found[0].excerpt})")
            start = time.perf_counter()
            hidden = redactor.redact(text)
            redact_seconds += time.perf_counter() - start
            if hidden:
                redacted += 1
                redacted_paths.append(f"{name}:{path} ({', '.join(sorted(hidden.found))})")
            if sum(map(len, sample)) < 5_000_000:
                sample.append(text)
    throughput = total_bytes / 1e6 / scan_seconds if scan_seconds else 0.0
    print(f"scrub+scan: {files} files, {total_bytes / 1e6:.1f} MB, {throughput:.1f} MB/s; "
          f"flagged {flagged} ({100 * flagged / max(files, 1):.2f}%), "
          f"hidden characters in {suspicious}")
    for line in flagged_paths[:20]:
        print("  flagged:", line)
    redact_throughput = total_bytes / 1e6 / redact_seconds if redact_seconds else 0.0
    big = "".join(sample)[:5_000_000]
    big_s = min(timed(lambda: redactor.redact(big), 3)) if big else 0.0
    print(f"redact: {redact_throughput:.1f} MB/s over the files, {big_s * 1e3:.0f} ms for one "
          f"{len(big) / 1e6:.1f} MB output; something redacted in {redacted} files")
    for line in redacted_paths[:20]:
        print("  redacted:", line)

    print(json.dumps({
        "shell_split_p50_us": round(split_p50 * 1e6, 1),
        "shell_split_p95_us": round(split_p95 * 1e6, 1),
        "decide_p50_us": round(dec_p50 * 1e6, 1),
        "decide_p95_us": round(dec_p95 * 1e6, 1),
        "decide_with_hook_p50_ms": round(hook_p50 * 1e3, 2),
        "decide_with_hook_p95_ms": round(hook_p95 * 1e3, 2),
        "decide_with_shell_hook_p50_ms": round(sh_p50 * 1e3, 2),
        "decide_with_shell_hook_p95_ms": round(sh_p95 * 1e3, 2),
        "scan_files": files,
        "scan_mb": round(total_bytes / 1e6, 2),
        "scan_throughput_mb_per_s": round(throughput, 2),
        "scan_false_positive_files": flagged,
        "scan_false_positive_rate_pct": round(100 * flagged / max(files, 1), 3),
        "redact_throughput_mb_per_s": round(redact_throughput, 2),
        "redact_5mb_ms": round(big_s * 1e3, 1),
        "redacted_files": redacted,
    }))


if __name__ == "__main__":
    main()
