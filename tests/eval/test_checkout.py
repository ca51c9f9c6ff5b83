from __future__ import annotations

import subprocess
from pathlib import Path

from tests.eval.conftest import git

from codeloop.eval.swebench.checkout import checkout, missing_files


def test_files_whose_content_the_mirror_lacks_are_named(tmp_path: Path) -> None:
    """A snapshot mirror may lack some objects; git's checkout then skips those files."""
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    (src / "code.py").write_text("x = 1\n")
    (src / "data" / "table.dat").write_text("big table\n")
    git("init", "-q", cwd=src)
    git("add", ".", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c", cwd=src)
    mirror = tmp_path / "m.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(src), str(mirror)], check=True)
    subprocess.run(["git", "--git-dir", str(mirror), "repack", "-q", "-a", "-d"], check=True)
    assert missing_files(mirror, "HEAD") == []
    # Rebuild the mirror's pack without the table's blob.
    table = git("rev-parse", "HEAD:data/table.dat", cwd=src).strip()
    keep = [o for o in git("rev-list", "--objects", "--all", cwd=src).split("\n") if o]
    kept = "".join(f"{o.split()[0]}\n" for o in keep if not o.startswith(table))
    for pack in (mirror / "objects" / "pack").iterdir():
        pack.unlink()
    subprocess.run(["git", "--git-dir", str(src / ".git"), "pack-objects", "-q",
                    str(mirror / "objects" / "pack" / "pack")], input=kept, text=True, check=True)
    assert missing_files(mirror, "HEAD") == ["data/table.dat"]
    repo = checkout(mirror, "HEAD", tmp_path / "repo")
    assert (repo / "code.py").is_file() and not (repo / "data" / "table.dat").exists()
