"""How often recent git history changed each file: a prior for where the next change lands.

On the SWE-bench localisation benchmark, files that recent commits touched are where fixes
land far more often than their share of the tree suggests; the ranker uses the counts as
one more ranked list, never alone.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

RECENT_COMMITS = 500
_GIT_TIMEOUT_S = 10.0


def change_counts(root: Path, commits: int = RECENT_COMMITS) -> dict[str, int]:
    """Paths (relative to `root`) and how many of the last `commits` non-merge commits
    touched each; empty when `root` is not in a git repository or git cannot read it."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "log", "--no-merges", "--format=", "--name-only",
             "--relative", f"-n{commits}", "HEAD", "--"],
            capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    # A mirror missing old objects stops the walk part-way with an error after printing the
    # commits it could read: those counts are still good.
    return dict(Counter(line for line in proc.stdout.splitlines() if line))
