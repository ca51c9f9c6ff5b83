from __future__ import annotations

import hashlib

from codeloop.events import FileEdited
from codeloop.tools.edit_tools import (
    ApplyPatch,
    ApplyPatchArgs,
    EditFile,
    EditFileArgs,
    WriteFile,
    WriteFileArgs,
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_edit_file_changes_only_the_workspace_and_emits_an_event(env):
    (env.repo / "a.py").write_text("def f():\n    return 1\n")
    ctx = env.tool_context()
    obs = EditFile().run(EditFileArgs(path="a.py", old="return 1", new="return 2"), ctx)
    assert obs.ok, obs.error
    assert (env.tree / "a.py").read_text() == "def f():\n    return 2\n"
    assert (env.repo / "a.py").read_text() == "def f():\n    return 1\n"
    [event] = env.events
    assert isinstance(event, FileEdited)
    assert event.path == "a.py" and event.tool == "edit_file" and event.strategy == "exact"
    assert event.before_sha == _sha(b"def f():\n    return 1\n")
    assert event.after_sha == _sha(b"def f():\n    return 2\n")
    assert "-    return 1" in event.diff and "+    return 2" in event.diff


def test_edit_file_refuses_ambiguity_and_writes_nothing(env):
    (env.repo / "a.py").write_text("x = 1\ny = 2\nx = 1\n")
    ctx = env.tool_context()
    obs = EditFile().run(EditFileArgs(path="a.py", old="x = 1", new="x = 3"), ctx)
    assert not obs.ok
    assert "2 places" in (obs.error or "") and "1, 3" in (obs.error or "")
    assert (env.tree / "a.py").read_text() == "x = 1\ny = 2\nx = 1\n"
    assert env.events == []
    obs = EditFile().run(EditFileArgs(path="a.py", old="x = 1", new="x = 3", replace_all=True), ctx)
    assert obs.ok
    assert (env.tree / "a.py").read_text() == "x = 3\ny = 2\nx = 3\n"


def test_edit_file_refusal_shows_the_closest_region(env):
    (env.repo / "a.py").write_text("".join(f"line_{i} = {i}\n" for i in range(30)))
    obs = EditFile().run(EditFileArgs(path="a.py", old="line_12 = 99\nline_13 = 13\n",
                                      new="x\n"), env.tool_context())
    assert not obs.ok
    assert "closest region is lines 13-14" in (obs.error or "")
    assert "   13 | line_12 = 12" in (obs.error or "")


def test_edit_file_reports_a_reapplied_edit(env):
    (env.repo / "a.py").write_text("a = 2\n")
    obs = EditFile().run(EditFileArgs(path="a.py", old="a = 1", new="a = 2"), env.tool_context())
    assert obs.ok and "already applied" in obs.output
    assert env.events == []


def test_edit_file_keeps_crlf_and_reports_missing_files(env):
    (env.repo / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    ctx = env.tool_context()
    assert EditFile().run(EditFileArgs(path="w.txt", old="two\n", new="2\nthree\n"), ctx).ok
    assert (env.tree / "w.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"
    obs = EditFile().run(EditFileArgs(path="nope.py", old="a", new="b"), ctx)
    assert not obs.ok and "does not exist" in (obs.error or "")


def test_edit_file_refuses_paths_outside_the_workspace(env):
    obs = EditFile().run(EditFileArgs(path="../x.py", old="a", new="b"), env.tool_context())
    assert not obs.ok and "outside the repository" in (obs.error or "")


def test_write_file_creates_and_keeps_line_endings(env):
    (env.repo / "old.txt").write_bytes(b"\xef\xbb\xbfa\r\n")
    ctx = env.tool_context()
    assert WriteFile().run(WriteFileArgs(path="pkg/new.py", content="x = 1\n"), ctx).ok
    assert (env.tree / "pkg/new.py").read_text() == "x = 1\n"
    assert WriteFile().run(WriteFileArgs(path="old.txt", content="b\nc\n"), ctx).ok
    assert (env.tree / "old.txt").read_bytes() == b"\xef\xbb\xbfb\r\nc\r\n"
    created = env.events[0]
    assert isinstance(created, FileEdited) and created.before_sha is None
    assert created.strategy == "write" and created.tool == "write_file"


def test_apply_patch_is_atomic_across_files(env):
    (env.repo / "a.py").write_text("a = 1\n")
    (env.repo / "b.py").write_text("b = 1\n")
    patch = (
        "a.py\n<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n\n"
        "b.py\n<<<<<<< SEARCH\nb = 5\n=======\nb = 6\n>>>>>>> REPLACE\n"
    )
    ctx = env.tool_context()
    obs = ApplyPatch().run(ApplyPatchArgs(patch=patch), ctx)
    assert not obs.ok and "b.py" in (obs.error or "")
    assert (env.tree / "a.py").read_text() == "a = 1\n"
    assert env.events == []


def test_apply_patch_envelope_adds_deletes_moves(env):
    (env.repo / "a.py").write_text("def f():\n    return 1\n")
    (env.repo / "gone.py").write_text("x\n")
    patch = (
        "*** Begin Patch\n"
        "*** Add File: new.py\n+print('hi')\n"
        "*** Delete File: gone.py\n"
        "*** Update File: a.py\n*** Move to: b.py\n@@ def f():\n-    return 1\n+    return 2\n"
        "*** End Patch\n"
    )
    obs = ApplyPatch().run(ApplyPatchArgs(patch=patch), env.tool_context())
    assert obs.ok, obs.error
    assert (env.tree / "new.py").read_text() == "print('hi')\n"
    assert not (env.tree / "gone.py").exists() and not (env.tree / "a.py").exists()
    assert (env.tree / "b.py").read_text() == "def f():\n    return 2\n"
    assert sorted(e.path for e in env.events if isinstance(e, FileEdited)) == [
        "a.py", "b.py", "gone.py", "new.py"]


def test_apply_patch_unified_diff_with_stale_numbers(env):
    (env.repo / "m.py").write_text("".join(f"v{i} = {i}\n" for i in range(50)))
    patch = "--- a/m.py\n+++ b/m.py\n@@ -3,3 +3,3 @@\n v39 = 39\n-v40 = 40\n+v40 = 400\n v41 = 41\n"
    obs = ApplyPatch().run(ApplyPatchArgs(patch=patch), env.tool_context())
    assert obs.ok, obs.error
    assert "v40 = 400\n" in (env.tree / "m.py").read_text()
