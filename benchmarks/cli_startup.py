"""CLI start-up: wall and CPU seconds of `codeloop --help`, `codeloop sessions` and a `run`
refused for a bad model name (everything a run does before its session), and how many
modules `import codeloop.cli` loads.

    PYTHONPATH=src python benchmarks/cli_startup.py [--runs 10]

Each command is a new Python process with its own empty config and data directories. The
last output line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "help": ["--help"],
    "sessions": ["sessions"],
    "bad_run": ["run", "fix it", "--model", "openai:  "],
}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system, of the child) seconds of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "codeloop", *argv], env=env, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _modules(env: dict[str, str]) -> int:
    code = "import sys, codeloop.cli; print(len(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    return int(out.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "repo"
        repo.mkdir()
        # The commands run in another directory: PYTHONPATH=src must still name this tree.
        path = os.pathsep.join(str(Path(p).resolve())
                               for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
        env = {**os.environ, "PYTHONPATH": path, "XDG_CONFIG_HOME": str(base / "config"),
               "XDG_CACHE_HOME": str(base / "cache"), "CODELOOP_DATA_DIR": str(base / "data")}
        for name, argv in COMMANDS.items():
            _once(argv, env, repo)  # the first start may compile bytecode: not counted
            walls, cpus = zip(*(_once(argv, env, repo) for _ in range(args.runs)), strict=True)
            figures[f"{name}_wall_s_median"] = round(statistics.median(walls), 3)
            figures[f"{name}_wall_s_p95"] = round(_p95(list(walls)), 3)
            figures[f"{name}_cpu_s_median"] = round(statistics.median(cpus), 3)
            print(f"codeloop {' '.join(argv):<34} wall median {figures[f'{name}_wall_s_median']:.3f} s"
                  f"  p95 {figures[f'{name}_wall_s_p95']:.3f} s"
                  f"  CPU median {figures[f'{name}_cpu_s_median']:.3f} s")
        figures["cli_import_modules"] = _modules(env)
        print(f"import codeloop.cli loads {figures['cli_import_modules']} modules")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
