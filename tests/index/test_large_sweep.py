"""A sweep that changes more files than the lexical overlay takes (a checkout moved to another
commit) rebuilds the lexical index once and serves only the new content."""

from __future__ import annotations

from pathlib import Path

from codeloop.index.lexical import REBUILD_MIN
from codeloop.index.service import RepoIndex


def _write(root: Path, n: int, word: str) -> None:
    (root / "pkg" / f"mod{n}.py").write_text(f"def {word}_{n}():\n    return '{word}'\n")


def test_a_sweep_over_many_changed_files_serves_only_the_new_content(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    total = REBUILD_MIN * 2
    for n in range(total):
        _write(root, n, "oldname")
    index = RepoIndex(root)
    assert index.update().added == total

    changed = REBUILD_MIN + 50
    for n in range(changed):
        _write(root, n, "newname")
    for n in range(total - 10, total):
        (root / "pkg" / f"mod{n}.py").unlink()
    (root / "pkg" / "extra.py").write_text("def brandnew():\n    return 1\n")
    stats = index.update()
    assert (stats.added, stats.changed, stats.removed) == (1, changed, 10)
    assert stats.lexical_rebuilt

    new_hits = index.search("newname", limit=total)
    assert {h.path for h in new_hits} == {f"pkg/mod{n}.py" for n in range(changed)}
    old_hits = index.search("oldname", limit=total)
    assert {h.path for h in old_hits} == {f"pkg/mod{n}.py" for n in range(changed, total - 10)}
    assert [h.path for h in index.search("brandnew")] == ["pkg/extra.py"]
    assert [p for p, _ in index.rank_files_lexical("newname", limit=total)
            if p not in {h.path for h in new_hits}] == []
    index.close()

    reopened = RepoIndex(root)
    assert {h.path for h in reopened.search("oldname", limit=total)} == \
        {h.path for h in old_hits}
    reopened.close()
