"""No default points into one machine's layout: data and mirrors come from options."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A path of the machine this project was built on, or its data beside a checkout.
MACHINE = re.compile(r"""["'](/work/|\.\./shared|\.\./\.mirror|/tmp/swb)""")


def test_sources_and_benchmarks_name_no_machine_paths() -> None:
    found = []
    for path in [*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("benchmarks").glob("*.py")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE.search(line.split("#", 1)[0]):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_recorded_results_name_no_machine_paths() -> None:
    # Records are published: their trajectory field names a file, never where it lay here.
    found = [f"{path.name}:{number}" for path in ROOT.joinpath("docs/results").glob("*.jsonl")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r'"(/tmp/|/work/|/root/|/home/)', line)]
    assert not found, found
