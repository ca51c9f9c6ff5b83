"""The bwrap backend over real workspaces: writes absorbed, the user's tree untouched."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from codeloop.sandbox import bwrap_backend
from codeloop.sandbox.base import Limits
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.errors import SandboxMisuse, SandboxUnavailable
from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID, Capabilities, Probe, probe
from codeloop.sandbox.user_tasks import counts_per_namespace, tasks_of
from codeloop.workspace.copy import CopyWorkspace
from codeloop.workspace.factory import open_workspace


@pytest.fixture(scope="module")
def caps() -> Capabilities:
    found = probe()
    if not found.isolation_available or not found.overlay.ok:
        pytest.skip(f"CANNOT EXERCISE: bwrap overlay unavailable ({found.overlay.detail})")
    return found


def _tree_hash(top: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(top)):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath, name)
            h.update(str(full.relative_to(top)).encode() + full.read_bytes())
    return h.hexdigest()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "README.md").write_text("readme\n")
    (root / "old.txt").write_text("old\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_command_writes_reach_the_workspace_not_the_repository(
    repo: Path, tmp_path: Path, caps: Capabilities
) -> None:
    before = _tree_hash(repo)
    ws = open_workspace(repo, tmp_path / "state")
    sandbox = BwrapSandbox(ws, capabilities=caps)
    result = sandbox.run(
        "echo 'x = 2' > pkg/mod.py; echo new > pkg/new.py; rm old.txt; mkdir -p a/b;"
        " echo deep > a/b/c.txt; cat README.md",
        cwd=ws.path,
    )
    assert result.exit_code == 0, result.output
    assert result.backend == "bwrap" and "readme" in result.output
    assert (ws.path / "pkg" / "mod.py").read_text() == "x = 2\n"
    assert (ws.path / "a" / "b" / "c.txt").read_text() == "deep\n"
    assert not (ws.path / "old.txt").exists()
    assert set(ws.changed_files()) >= {"pkg/mod.py", "pkg/new.py", "old.txt", "a/b/c.txt"}
    assert _tree_hash(repo) == before
    # A second command sees the first one's results.
    again = sandbox.run("cat pkg/new.py; ls old.txt", cwd=ws.path / "pkg")
    assert "new" in again.output and "No such file" in again.output
    assert _tree_hash(repo) == before


def test_per_command_scratch_is_removed(repo: Path, tmp_path: Path, caps: Capabilities) -> None:
    ws = open_workspace(repo, tmp_path / "state")
    BwrapSandbox(ws, capabilities=caps).run("echo hi > f", cwd=ws.path)
    leftovers = [p for p in ws.path.parent.rglob("*") if "upper" in p.name or p.name == "work"]
    assert leftovers == []


def test_setuid_bits_never_reach_the_workspace(
    repo: Path, tmp_path: Path, caps: Capabilities
) -> None:
    ws = open_workspace(repo, tmp_path / "state")
    result = BwrapSandbox(ws, capabilities=caps).run(
        "cp /bin/true mine; chmod 4755 mine; chmod 2755 pkg; stat -c %a mine", cwd=ws.path
    )
    assert result.output.strip().splitlines()[-1] in ("4755", "755")
    mode = (ws.path / "mine").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID)


def test_cwd_outside_the_workspace_is_refused(
    repo: Path, tmp_path: Path, caps: Capabilities
) -> None:
    ws = open_workspace(repo, tmp_path / "state")
    with pytest.raises(SandboxMisuse):
        BwrapSandbox(ws, capabilities=caps).run("true", cwd=tmp_path)


def test_without_overlay_a_copy_is_bind_mounted(
    repo: Path, tmp_path: Path, caps: Capabilities
) -> None:
    # The probe result is edited to stand for a machine without overlay support.
    no_overlay = dataclasses.replace(caps, overlay=Probe(False, "simulated: no overlay"))
    copy = CopyWorkspace(repo, tmp_path / "copy-state")
    result = BwrapSandbox(copy, capabilities=no_overlay).run("echo w > w.txt", cwd=copy.path)
    assert result.exit_code == 0, result.output
    assert any("bind-mounted" in n for n in result.notes)
    assert (copy.path / "w.txt").read_text() == "w\n"
    assert not (repo / "w.txt").exists()
    linked = open_workspace(repo, tmp_path / "linked-state")
    if linked.kind != "copy":
        with pytest.raises(SandboxUnavailable):
            BwrapSandbox(linked, capabilities=no_overlay).run("true", cwd=linked.path)


def test_no_workspace_means_writes_are_discarded(tmp_path: Path, caps: Capabilities) -> None:
    (tmp_path / "keep.txt").write_text("keep\n")
    result = BwrapSandbox(capabilities=caps).run("cat keep.txt; echo gone > keep.txt", cwd=tmp_path)
    assert "keep" in result.output
    assert (tmp_path / "keep.txt").read_text() == "keep\n"


def test_the_workspace_top_is_writable_by_access_check(
    repo: Path, tmp_path: Path, caps: Capabilities
) -> None:
    # Tools such as hypothesis call access(2) before writing in the cwd; as root the command
    # runs under another uid whose writes pass only through DAC_OVERRIDE, which access ignores.
    ws = open_workspace(repo, tmp_path / "state")
    check = "python3 -c 'import os; print(os.access(\".\", os.W_OK | os.X_OK))'"
    for sandbox in (BwrapSandbox(ws, capabilities=caps), BwrapSandbox(None, capabilities=caps)):
        result = sandbox.run(check, ws.path if sandbox.workspace else repo)
        assert result.output.strip() == "True", result.output


def test_an_overlaid_directory_keeps_writes_in_its_layer(tmp_path: Path, caps: Capabilities) -> None:
    shared, layer, work = tmp_path / "shared", tmp_path / "layer", tmp_path / "work"
    shared.mkdir()
    work.mkdir()
    (shared / "lib.txt").write_text("lib\n")
    box = BwrapSandbox(extra_overlays={shared: layer}, capabilities=caps)
    first = box.run(f"cat {shared}/lib.txt && echo planted > {shared}/planted.txt", cwd=work)
    assert first.exit_code == 0 and "lib" in first.output, first.output
    # A later command in the same sandbox sees the write; the directory itself never does.
    second = box.run(f"cat {shared}/planted.txt", cwd=work)
    assert second.output.strip() == "planted", second.output
    assert not (shared / "planted.txt").exists()
    assert (layer / "upper" / "planted.txt").read_text() == "planted\n"
    no_overlay = dataclasses.replace(caps, overlay=Probe(False, "simulated: no overlay"))
    with pytest.raises(SandboxUnavailable):
        BwrapSandbox(extra_overlays={shared: layer}, capabilities=no_overlay)


# Fork bombs elsewhere in the suite (that group) would add up to 64 tasks of the same uid.
@pytest.mark.xdist_group("process-limits")
@pytest.mark.parametrize("launcher", ["prlimit", "pre-exec hook"])
def test_limits_are_in_force_inside(
    tmp_path: Path, caps: Capabilities, monkeypatch: pytest.MonkeyPatch, launcher: str
) -> None:
    if launcher == "pre-exec hook":
        # Stands for a host without util-linux's prlimit.
        monkeypatch.setattr(bwrap_backend, "PRLIMIT", str(tmp_path / "no-prlimit"))
    limits = Limits(memory_mb=300, max_file_mb=7, max_processes=77, max_open_files=99, cpu_s=33)
    runs_as = DEFAULT_SANDBOX_UID if caps.running_as_root else os.getuid()
    before = tasks_of(runs_as)
    result = BwrapSandbox(capabilities=caps).run(
        "cat /proc/self/limits", cwd=tmp_path, limits=limits
    )
    after = tasks_of(runs_as)
    soft = {
        line[:26].strip(): line[26:].split()[0] for line in result.output.splitlines()[1:] if line
    }
    assert soft["Max address space"] == str(300 << 20)
    assert soft["Max file size"] == str(7 << 20)
    # RLIMIT_NPROC counts every task of the uid the command runs as (the user's own, or under
    # root the sandbox uid's, which other tests' commands share), so those running when it
    # started come on top of the 77; they come and go meanwhile, hence the slack.
    extra = int(soft["Max processes"]) - 77
    assert 0 <= extra <= max(before, after) + 10, (soft["Max processes"], before, after)
    if launcher == "prlimit" and not caps.running_as_root and counts_per_namespace():
        # In the command's own user namespace the kernel counts only its tasks: exact
        assert extra == 1, soft["Max processes"]  # and the sandbox's init
    assert soft["Max open files"] == "99"
    assert soft["Max cpu time"] == "33"
    assert soft["Max core file size"] == "0"
    # Unset, the CPU limit is the timeout: a long test run ends by its deadline, not SIGXCPU.
    longer = BwrapSandbox(capabilities=caps).run(
        "cat /proc/self/limits", cwd=tmp_path, limits=Limits(timeout_s=1234.2))
    assert "Max cpu time              1235 " in longer.output, longer.output


def test_git_works_on_the_workspace_repository(repo: Path, tmp_path: Path,
                                               caps: Capabilities) -> None:
    # The repository lives below a private (0700) directory, as a temp checkout does; the
    # sandbox's parents of the workspace must stay traversable for git's access() checks,
    # and git must trust a repository the dropped uid does not own.
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    ws = open_workspace(repo, private / "state")
    sandbox = BwrapSandbox(ws, capabilities=caps)
    result = sandbox.run("git log --format=%s -1",
                         ws.path, limits=Limits(timeout_s=60))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "first"


def test_everyday_tools_run_with_no_capabilities_and_a_trimmed_etc(
    repo: Path, tmp_path: Path, caps: Capabilities
) -> None:
    # The privileges taken away (class 44) must not break ordinary work: interpreters,
    # package tools, compilers and TLS certificates, on root-owned files when root.
    ws = open_workspace(repo, tmp_path / "state")
    (ws.path / "hello.c").write_text('#include <stdio.h>\nint main(void){puts("compiled");}\n')
    tools = [  # (program that must exist on the host, command, expected output)
        ("python3", "python3 -c 'import ssl, pwd, os; ssl.create_default_context();"
                    " print(pwd.getpwuid(os.getuid()).pw_dir)'", "/tmp"),
        ("python3", "python3 -m pip --version", "pip "),
        ("git", "git --version && git status --short pkg", "git version"),
        ("gcc", "gcc -o hello hello.c && ./hello", "compiled"),
        ("node", "node -e 'console.log(40 + 2)'", "42"),
        ("python3", "echo 'x = 3' >> pkg/mod.py && python3 -c 'import pkg.mod as m; print(m.x)'",
         "3"),
    ]
    sandbox = BwrapSandbox(ws, capabilities=caps)
    for tool, command, expected in tools:
        if shutil.which(tool) is None:
            continue
        result = sandbox.run(command, cwd=ws.path, limits=Limits(timeout_s=60))
        assert result.exit_code == 0 and expected in result.output, (command, result.output)


@pytest.mark.parametrize(
    ("release", "expected"),
    [("6.18.44-fc-v669", True), ("5.14.0-1-amd64", True), ("5.13.19", False),
     ("4.19.0-25-amd64", False), ("6.1rc3", True), ("weird", False)],
)
def test_process_limits_count_per_user_namespace_from_linux_5_14(
        release: str, expected: bool) -> None:
    assert counts_per_namespace(release) is expected
