"""The policy reads patch paths itself (it imports nothing from edit/): the two must agree."""

from __future__ import annotations

import pytest

from codeloop.edit.formats import parse_patch
from codeloop.policy.rules import patch_paths

PATCHES = [
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n",
    "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@\n-old\n+new\n"
    "diff --git a/b/c.py b/b/c.py\n--- a/b/c.py\n+++ b/b/c.py\n@@\n-1\n+2\n",
    "*** Begin Patch\n*** Update File: pkg/mod.py\n@@ def f():\n-    return 1\n+    return 2\n"
    "*** Add File: pkg/new.py\n+print('hi')\n*** Delete File: old.py\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a.py\n*** Move to: moved/a.py\n@@\n-x\n+y\n*** End Patch\n",
    "lib/util.py\n```python\n<<<<<<< SEARCH\ndef f():\n=======\ndef g():\n>>>>>>> REPLACE\n```\n",
    "docs/new.md\n<<<<<<< SEARCH\n=======\n# New\n>>>>>>> REPLACE\n",
]


@pytest.mark.parametrize("patch", PATCHES)
def test_every_path_the_edit_touches_is_seen_by_the_policy(patch: str) -> None:
    touched = set()
    for op in parse_patch(patch):
        touched.add(op.path)
        if op.move_to:
            touched.add(op.move_to)
    seen = {p.removeprefix("./") for p in patch_paths(patch)}
    assert touched <= seen, f"policy misses {touched - seen}"
