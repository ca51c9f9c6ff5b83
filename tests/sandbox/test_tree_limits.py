"""Whole-command limits and the privileges a command starts with: cgroups, RSS polling,
idmapped directories, the capability flags and the /etc allow-list, on the real host."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.sandbox.base import Limits
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.bwrap_profile import Profile, WorkspaceMount, bwrap_argv
from codeloop.sandbox.cgroups import CommandCgroup, find_plan, sweep_stale
from codeloop.sandbox.etc_view import etc_entries
from codeloop.sandbox.idmap import IdmappedDirs
from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID, Capabilities
from codeloop.sandbox.tree_watch import TreeWatch, tree

ROOT = os.geteuid() == 0



@pytest.fixture
def host_tree() -> Iterator[subprocess.Popen[bytes]]:
    """A real process tree on the host: a shell holding five sleeping children."""
    proc = subprocess.Popen(["/bin/sh", "-c", "for i in 1 2 3 4 5; do sleep 30 & done; wait"],
                            start_new_session=True)
    deadline = time.monotonic() + 5
    while len(tree(proc.pid)) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    yield proc
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_tree_walk_finds_every_descendant(host_tree: subprocess.Popen[bytes]) -> None:
    found = tree(host_tree.pid)
    assert found[0] == host_tree.pid and len(found) == 6


def test_polling_names_a_process_count_over_the_limit(host_tree: subprocess.Popen[bytes]) -> None:
    # Five children and the shell: over 3 + bwrap's own two, within 10 + 2.
    assert TreeWatch(Limits(max_processes=3)).check(host_tree.pid) == (
        "process limit (3 for the whole command) exceeded")
    assert TreeWatch(Limits(max_processes=10)).check(host_tree.pid) is None


def test_polling_sums_the_memory_of_the_tree() -> None:
    code = "import os, time; x = b'\\x07' * (40 << 20); os.write(1, b'held\\n'); time.sleep(30)"
    shell = subprocess.Popen(
        ["/bin/sh", "-c", f'{sys.executable} -c "$0" & {sys.executable} -c "$0" & wait', code],
        stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert shell.stdout is not None
        assert shell.stdout.read(10) == b"held\n" * 2
        children = tree(shell.pid)[1:]
        assert len(children) == 2
        # Each 40 MB child is under 60 MB; the tree is not.
        assert TreeWatch(Limits(memory_mb=60)).check(shell.pid) == (
            "memory limit (60 MB for the whole command) exceeded")
        assert TreeWatch(Limits(memory_mb=60)).check(children[0]) is None
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def test_without_root_or_delegation_no_cgroup_is_claimed() -> None:
    plan, detail = find_plan(ROOT)
    if plan is None:
        assert detail  # says why, for doctor
    else:
        assert plan.version in (1, 2) and plan.memory_parent.is_dir()


def test_a_command_cgroup_carries_the_limits_and_is_removed(caps: Capabilities) -> None:
    if caps.cgroup_plan is None:
        pytest.skip(f"CANNOT EXERCISE: no usable cgroup here ({caps.cgroups.detail})")
    lim = Limits(memory_mb=123, max_processes=45)
    with CommandCgroup(caps.cgroup_plan, lim) as group:
        memory = group.memory
        limit = "memory.max" if group.plan.version == 2 else "memory.limit_in_bytes"
        assert (memory / limit).read_text().strip() == str(123 << 20)
        pids = [d for d in group.dirs if (d / "pids.max").exists()]
        assert all((d / "pids.max").read_text().strip() == "47" for d in pids)
        sleeper = subprocess.Popen(["/bin/sleep", "30"])
        try:
            group.adopt([sleeper.pid])
            joined = Path(f"/proc/{sleeper.pid}/cgroup").read_text()
        finally:
            sleeper.kill()
            sleeper.wait()
        assert memory.name in joined
        assert group.exceeded() is None
    assert not memory.exists()


def test_the_command_starts_inside_its_cgroup(tmp_path: Path, caps: Capabilities) -> None:
    # bwrap's processes are moved in while bwrap holds the command back: the command's
    # very first process, and all it forks, are born inside.
    if caps.cgroup_plan is None:
        pytest.skip(f"CANNOT EXERCISE: no usable cgroup here ({caps.cgroups.detail})")
    result = BwrapSandbox(capabilities=caps).run(
        "cat /proc/self/cgroup; sh -c 'cat /proc/self/cgroup'", cwd=tmp_path)
    keys = (":memory:", ":pids:") if caps.cgroup_plan.version == 1 else ("0::",)
    lines = [line for line in result.output.splitlines() if any(k in line for k in keys)]
    assert len(lines) >= 2 and all(f"codeloop-{os.getpid()}-" in line for line in lines), (
        result.output)


def test_cgroups_of_a_process_gone_are_swept(caps: Capabilities) -> None:
    plan = caps.cgroup_plan
    if plan is None:
        pytest.skip(f"CANNOT EXERCISE: no usable cgroup here ({caps.cgroups.detail})")
    # A pid above pid_max never runs: its empty cgroup is a crashed process's leftover.
    dead = plan.memory_parent / "codeloop-99999999-deadbeef"
    mine = plan.memory_parent / f"codeloop-{os.getpid()}-0badcafe"
    dead.mkdir()
    mine.mkdir()
    try:
        sweep_stale(plan)
        assert not dead.exists() and mine.exists()
    finally:
        for d in (dead, mine):
            if d.exists():
                d.rmdir()


def test_idmapped_dirs_show_root_files_as_the_sandbox_uid(tmp_path: Path) -> None:
    if not ROOT:
        pytest.skip("CANNOT EXERCISE: idmapped directories are made only when running as root")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "f").write_text("x")
    mapped = IdmappedDirs([shared], DEFAULT_SANDBOX_UID)
    try:
        inside = subprocess.run([*mapped.launcher(), "/usr/bin/stat", "-c", "%u", str(shared / "f")],
                                pass_fds=(mapped.fd,), capture_output=True, text=True, check=True)
        assert inside.stdout.strip() == str(DEFAULT_SANDBOX_UID)
        assert (shared / "f").stat().st_uid == 0
        # The mapping lives only in the held namespace: the host's mount table has no trace.
        assert str(shared) not in Path("/proc/self/mountinfo").read_text()
        assert mapped.covers([shared])
        (shared / "f").unlink()
        shared.rmdir()
        shared.mkdir()
        assert not mapped.covers([shared])  # a replaced directory is mapped afresh
    finally:
        mapped.close()


def test_root_owned_trees_are_writable_to_commands_and_stay_unchanged(
    tmp_path: Path, caps: Capabilities
) -> None:
    # As root the command's uid owns nothing; without CAP_DAC_OVERRIDE it edits root's
    # files in the directory it works in (an in-place build, a test cache) only because that
    # directory and the toolchain's writable ones are idmapped to it.
    repo, venv, layer = tmp_path / "repo", tmp_path / "venv", tmp_path / "venv-layer"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    (venv / "lib").mkdir(parents=True)
    box = BwrapSandbox(capabilities=caps, extra_overlays={venv: layer})
    result = box.run(
        f"echo 'x = 2' > pkg/mod.py && mkdir pkg/build && echo so > pkg/build/ext.so &&"
        f" echo pth > {venv}/lib/editable.pth && cat pkg/mod.py", cwd=repo)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "x = 2"
    assert (repo / "pkg" / "mod.py").read_text() == "x = 1\n"  # no workspace: discarded
    assert not (venv / "lib" / "editable.pth").exists()
    kept = layer / "upper" / "lib" / "editable.pth"
    assert kept.read_text() == "pth\n" and kept.stat().st_uid == os.getuid()


def test_bwrap_keeps_only_what_setpriv_needs(tmp_path: Path) -> None:
    mount = WorkspaceMount(tmp_path, tmp_path)
    dropped = bwrap_argv("bwrap", Profile(mount, tmp_path, {}, 3, 8, 8, drop_to=(7, 7)), "true")
    adds = [dropped[i + 1] for i, a in enumerate(dropped) if a == "--cap-add"]
    assert "--cap-drop" in dropped and dropped[dropped.index("--cap-drop") + 1] == "ALL"
    assert adds == ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"]  # one per flag
    assert "--bounding-set=-all" in dropped and "--ambient-caps=-all" in dropped
    assert not [a for a in dropped if "dac_override" in a.lower()]
    plain = bwrap_argv("bwrap", Profile(mount, tmp_path, {}, 3, 8, 8), "true")
    assert "--cap-add" not in plain and "--cap-drop" in plain


def test_the_etc_allow_list_never_names_a_secret(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    for rel in ("shadow", "gshadow", "sudoers", "ssl/private/k", "ssl/certs/c", "ssh/ssh_host_rsa_key",
                "python3.11/sitecustomize.py", "pip.conf", "hosts", "java-17-openjdk/x"):
        (etc / rel).parent.mkdir(parents=True, exist_ok=True)
        (etc / rel).write_text("x")
    assert set(etc_entries(etc)) == {"ssl/certs", "python3.11", "hosts", "java-17-openjdk"}


def test_tmpfs_is_never_larger_than_the_memory_limit(tmp_path: Path, caps: Capabilities) -> None:
    polled = dataclasses.replace(caps, cgroup_plan=None)
    result = BwrapSandbox(capabilities=polled).run(
        "df -m /tmp /dev/shm | tail -2", cwd=tmp_path, limits=Limits(memory_mb=40))
    sizes = [int(line.split()[1]) for line in result.output.splitlines()]
    assert sizes == [40, 40], result.output
