"""The repository is `--repo/-C PATH` (default: the current directory) in every command that
takes one; the older spellings still work, each with a note on stderr naming the new one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import _one_instance, env_for
from tests.session.helpers import make_repo


def codeloop(tmp: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeloop", *args], env=env_for(tmp),
                          capture_output=True, text=True, timeout=240, cwd=cwd or tmp)


def ok(out: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert out.returncode == 0, out.stderr + out.stdout
    assert "Traceback" not in out.stderr
    return out


def noted(out: subprocess.CompletedProcess[str], old: str, new: str) -> None:
    """The command ran and said, once, that `old` is deprecated in favour of `new`."""
    ok(out)
    assert out.stderr.count("deprecated") == 1, out.stderr
    assert old in out.stderr and new in out.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.mark.parametrize("spelling", ["--repo", "-C"])
def test_index_and_search_take_the_repo_option(tmp_path: Path, repo: Path, spelling: str) -> None:
    figures = json.loads(ok(codeloop(tmp_path, "index", spelling, str(repo), "--json")).stdout)
    assert figures["root"] == str(repo.resolve())
    found = json.loads(ok(codeloop(tmp_path, "search", "add", spelling, str(repo),
                                   "--symbol", "--json")).stdout)
    assert [(hit["path"], hit["name"]) for hit in found] == [("calc.py", "add")]
    regex = json.loads(ok(codeloop(tmp_path, "search", r"a - b", "--regex", spelling,
                                   str(repo), "--json")).stdout)
    assert [(hit["path"], hit["line"]) for hit in regex] == [("calc.py", 2)]
    assert "deprecated" not in figures and not codeloop(tmp_path, "index", spelling,
                                                        str(repo)).stderr


def test_the_default_is_the_current_directory(tmp_path: Path, repo: Path) -> None:
    figures = json.loads(ok(codeloop(tmp_path, "index", "--json", cwd=repo)).stdout)
    assert figures["root"] == str(repo.resolve())
    found = json.loads(ok(codeloop(tmp_path, "search", "add", "--symbol", "--json",
                                   cwd=repo)).stdout)
    assert [hit["path"] for hit in found] == ["calc.py"]


def test_older_spellings_of_index_and_search_still_work_with_a_note(
        tmp_path: Path, repo: Path) -> None:
    old = codeloop(tmp_path, "index", str(repo), "--json")
    noted(old, "codeloop index PATH", "--repo PATH")
    assert json.loads(old.stdout)["root"] == str(repo.resolve())
    for flag in ("--path", "-p"):
        out = codeloop(tmp_path, "search", "add", flag, str(repo), "--symbol", "--json")
        noted(out, "--path/-p", "--repo PATH")
        assert [hit["path"] for hit in json.loads(out.stdout)] == ["calc.py"]


def test_a_repository_given_two_ways_is_refused(tmp_path: Path, repo: Path) -> None:
    out = codeloop(tmp_path, "index", str(repo), "--repo", str(tmp_path))
    assert out.returncode == 2 and "given twice" in out.stderr and "Traceback" not in out.stderr


def test_verify_takes_the_repo_option_and_its_old_positional(tmp_path: Path, repo: Path) -> None:
    new = json.loads(ok(codeloop(tmp_path, "verify", "-C", str(repo), "--plan", "--json",
                                 "--no-checks")).stdout)
    assert any("unittest" in line for line in new["plan"])
    old = codeloop(tmp_path, "verify", str(repo), "--plan", "--json", "--no-checks")
    noted(old, "codeloop verify PATH", "--repo PATH")
    assert json.loads(old.stdout) == new


def test_policy_check_trust_and_run_take_the_short_spelling(tmp_path: Path, repo: Path) -> None:
    decision = json.loads(ok(codeloop(tmp_path, "policy", "check", "ls", "-C", str(repo),
                                      "--json")).stdout)
    assert decision["action"] in ("allow", "ask", "deny")
    trust = codeloop(tmp_path, "trust", "-C", str(repo), "--json")
    assert trust.returncode == 2 and "does not exist" in trust.stderr  # no config: nothing to trust
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "finish",
                                                   "arguments": {"summary": "ok"}}]}]))
    ok(codeloop(tmp_path, "run", "look", "-C", str(repo), "--model", f"scripted:{script}",
                "--json"))


def test_patch_names_its_file_with_file_and_still_takes_path(tmp_path: Path, repo: Path) -> None:
    diff = tmp_path / "fix.diff"
    diff.write_text("@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n")
    new = json.loads(ok(codeloop(tmp_path, "patch", str(diff), "-C", str(repo), "--file",
                                 "calc.py", "--dry-run", "--json")).stdout)
    assert new["files"] == [{"path": "calc.py", "strategy": "exact", "changed": True,
                             "action": "update"}]
    old = codeloop(tmp_path, "patch", str(diff), "--repo", str(repo), "--path", "calc.py",
                   "--json")
    noted(old, "--path", "--file FILE")
    assert (repo / "calc.py").read_text().endswith("return a + b\n")


def test_eval_filters_by_repo_name_and_still_takes_repo(tmp_path: Path) -> None:
    base = ["eval", "swebench", "--instances", str(_one_instance(tmp_path)), "--mirrors",
            str(tmp_path / "mirrors"), "--env-cache", str(tmp_path / "envs"), "--json"]
    assert "no instance matches" in codeloop(tmp_path, *base, "--repo-name", "django").stderr
    # flask matches; the run then stops at the missing mirror, past the filter.
    assert "no bare mirror" in codeloop(tmp_path, *base, "--repo-name", "flask").stderr
    old = codeloop(tmp_path, *base, "--repo", "django")
    assert old.returncode == 2 and "no instance matches" in old.stderr
    assert "deprecated" in old.stderr and "--repo-name TEXT" in old.stderr
