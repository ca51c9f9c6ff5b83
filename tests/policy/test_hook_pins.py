"""Which files a hook command names, and how pins judge them; real files in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeloop.policy.hook_pins import HookGuard, named_paths, pin_hook_files


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "hooks").mkdir(parents=True)
    (root / "hooks" / "a.py").write_text("print('a')\n")
    (root / "hooks" / "b.sh").write_text("echo b\n")
    return root


@pytest.mark.parametrize("command", [
    "python3 hooks/a.py",
    'python3 "$CODELOOP_PROJECT_DIR/hooks/a.py" --flag',
    "python3 ${CLAUDE_PROJECT_DIR}/hooks/a.py",
    "cd $CLAUDE_PROJECT_DIR && python3 ./hooks/a.py | tee /dev/null",
    "bash -c 'python3 \"$CODELOOP_PROJECT_DIR\"/hooks/a.py'",
    "env HOOK=hooks/a.py python3 -c pass",
    "python3 --script=hooks/a.py",
])
def test_every_spelling_names_the_file(project: Path, command: str) -> None:
    assert project / "hooks" / "a.py" in named_paths(command, project)


def test_home_relative_words_expand(project: Path, monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tmp_path / "bin" / "guard" in named_paths("~/bin/guard --x", project)


def test_pins_cover_existing_regular_files_only(project: Path) -> None:
    pins = pin_hook_files(["python3 hooks/a.py hooks/missing.py hooks", "sh hooks/b.sh"],
                          project)
    assert sorted(Path(p.path).name for p in pins) == ["a.py", "b.sh"]
    assert all(len(p.sha256) == 64 for p in pins)


def test_unchanged_files_pass_and_every_change_is_named(project: Path, tmp_path: Path) -> None:
    command = "python3 hooks/a.py"
    guard = HookGuard.pin_now([command], project)
    assert guard.refusal(command) is None
    (project / "hooks" / "a.py").write_text("print('changed')\n")
    assert "changed since the session started" in (guard.refusal(command) or "")
    (project / "hooks" / "a.py").unlink()
    assert "missing" in (guard.refusal(command) or "")
    (project / "hooks" / "a.py").mkdir()
    assert "directory" in (guard.refusal(command) or "")


def test_a_link_on_the_way_is_never_followed(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.py").write_text("print('a')\n")
    (project / "linked").symlink_to(elsewhere)
    command = "python3 linked/a.py"
    assert pin_hook_files([command], project) == []
    assert "symbolic link" in (HookGuard.pin_now([command], project).refusal(command) or "")


def test_an_unparsable_command_is_refused(project: Path) -> None:
    guard = HookGuard.pin_now(["python3 'hooks/a.py"], project)
    assert "cannot read the hook command" in (guard.refusal("python3 'hooks/a.py") or "")


def test_a_fifo_swapped_in_outside_the_repository_is_refused_without_hanging(
        project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "guard.sh"
    outside.write_text("exit 0\n")
    command = f"sh {outside}"
    guard = HookGuard.pin_now([command], project)
    outside.unlink()
    os.mkfifo(outside)
    assert "no longer a regular file" in (guard.refusal(command) or "")
