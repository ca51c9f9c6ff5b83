"""How long `for_terminal` takes on a large diff before the CLI shows it.

    PYTHONPATH=src python benchmarks/terminal_text.py [--mb 10]

The diff adds every line of this checkout's Python sources until it has the size asked for;
variants add non-ASCII text, escape sequences and bidi controls. The last output line is one
JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from codeloop.policy.scrub import for_terminal

SOURCES = Path(__file__).resolve().parents[1] / "src"


def big_diff(size: int) -> str:
    lines: list[str] = []
    total = 0
    while total < size:
        for path in sorted(SOURCES.rglob("*.py")):
            for line in path.read_text().splitlines():
                lines.append(f"+{line}\n")
                total += len(line) + 2
                if total >= size:
                    return "".join(lines)
    return "".join(lines)


def seconds(text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for_terminal(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    diff = big_diff(int(args.mb * 1e6))
    variants = {
        "plain": diff,
        "non_ascii": diff.replace("return", "retürn 日本"),
        "escapes": diff.replace("import", "imp\x1b[2K\x1b[1Aort"),
        "bidi": diff.replace("self", "se\u202elf\u2066"),
    }
    figures = {}
    for name, text in variants.items():
        took = seconds(text)
        figures[f"{name}_s"] = round(took, 4)
        print(f"{name}: {len(text.encode()) / 1e6:.1f} MB in {took * 1e3:.1f} ms "
              f"({len(text.encode()) / 1e6 / took:.0f} MB/s)")
    print(json.dumps({"mb": args.mb, **figures}))


if __name__ == "__main__":
    main()
