"""Class 44: privileges left in the sandbox — capabilities after the uid drop, /etc bound
whole, memory limited per process only (six children of 200 MB passed memory_mb=300)."""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeloop.sandbox.base import CommandResult
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.etc_view import etc_entries
from codeloop.sandbox.probe import Capabilities

from .conftest import Box
from .test_resources import _host_processes_with

pytestmark = pytest.mark.security

ROOT = os.geteuid() == 0
_CAP_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
MB = 1 << 20


def _unreadable(result: CommandResult, *secrets_: str) -> None:
    for secret in secrets_:
        assert secret not in result.output, result.output


# --- capabilities -----------------------------------------------------------------------


def test_class44_no_capability_survives_in_any_set_or_process(box: Box) -> None:
    # The shell, a detached grandchild and a fresh exec all report every set empty, the
    # bounding set included, so nothing can be regained; prctl agrees for each capability.
    result = box.run(
        "grep -E '^(Cap|NoNewPrivs)' /proc/self/status;"
        " setsid sh -c \"grep -E '^Cap' /proc/self/status\";"
        " env -i /usr/bin/python3 -c \"import ctypes; c = ctypes.CDLL(None);"
        " print('BOUND', [n for n in range(64) if c.prctl(23, n, 0, 0, 0) == 1]);"
        " print('AMBIENT-RAISE', c.prctl(47, 2, 1, 0, 0))\""  # PR_CAP_AMBIENT_RAISE DAC_OVERRIDE
    )
    lines = result.output.splitlines()
    for name in _CAP_SETS:
        values = [line.split(":\t")[1] for line in lines if line.startswith(name + ":")]
        assert values and set(values) == {"0000000000000000"}, result.output
    assert "NoNewPrivs:\t1" in result.output
    assert "BOUND []" in result.output
    assert "AMBIENT-RAISE -1" in result.output


@pytest.fixture
def root_only_files(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory the sandbox can see holding a mode-000 file (root's, when root) and, as
    root, a 0600 file of another uid."""
    token = "ROOT-ONLY-" + secrets.token_hex(8)
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    (shelf / "sealed").write_text(token + "\n")
    os.chmod(shelf / "sealed", 0o000)
    if ROOT:
        (shelf / "theirs").write_text(token + "\n")
        os.chown(shelf / "theirs", 4242, 4242)
        os.chmod(shelf / "theirs", 0o600)
    yield shelf, token
    for path in shelf.iterdir():
        path.chmod(0o600)  # so that pytest can remove it


def test_class44_files_it_does_not_own_cannot_be_read_changed_or_chowned(
    tmp_path: Path, caps: Capabilities, root_only_files: tuple[Path, str]
) -> None:
    # A read-only bind (and, as root, a writable one holding another uid's file):
    # CAP_DAC_OVERRIDE would read them and rewrite the writable one. (Root's own files in a
    # writable bind are the command's by design: idmapped to its uid.)
    shelf, token = root_only_files
    writable = tmp_path / "writable"
    writable.mkdir()
    if ROOT:
        shutil.copy(shelf / "theirs", writable / "theirs")
        os.chown(writable / "theirs", 4242, 4242)
        os.chmod(writable / "theirs", 0o600)
    before = {p: (p.stat(), _bytes(p)) for p in [*shelf.iterdir(), *writable.iterdir()]}
    work = tmp_path / "work"
    work.mkdir()
    sandbox = BwrapSandbox(capabilities=caps, extra_ro_binds=[shelf], extra_rw_binds=[writable])
    attempts = []
    for path in before:
        attempts += [f"cat {path}", f"echo pwned >> {path}", f"chmod 666 {path}",
                     f"chown {61000 if ROOT else os.getuid()} {path}", f"touch {path}",
                     f"truncate -s 0 {path}"]
    result = sandbox.run("; ".join(f"{a} && echo DONE:{a}" for a in attempts) + "; true",
                         cwd=work)
    _unreadable(result, token)
    done = [line for line in result.output.splitlines() if line.startswith("DONE:")]
    assert done == [], result.output
    for path, (st, data) in before.items():
        now = path.stat()
        assert (now.st_mode, now.st_uid, now.st_gid, now.st_mtime_ns) == (
            st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns)
        assert _bytes(path) == data


def _bytes(path: Path) -> bytes:
    """Read a file whatever its mode (the test may run without CAP_DAC_OVERRIDE)."""
    mode = path.stat().st_mode
    path.chmod(0o600)
    try:
        return path.read_bytes()
    finally:
        path.chmod(mode & 0o7777)


# --- /etc -------------------------------------------------------------------------------


@pytest.fixture
def planted_key() -> Iterator[tuple[str, str]]:
    """As root, a real 0600 key under /etc/ssl/private, removed afterwards; otherwise the
    host's own (unreadable to us) directory is the target."""
    token = "PRIVATE-KEY-" + secrets.token_hex(8)
    private = Path("/etc/ssl/private")
    if not ROOT or not private.is_dir():
        yield "codeloop-test-absent.key", token
        return
    name = f"codeloop-test-{secrets.token_hex(6)}.key"
    path = private / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, f"-----BEGIN PRIVATE KEY-----\n{token}\n".encode())
        os.close(fd)
        yield name, token
    finally:
        path.unlink(missing_ok=True)
    assert not path.exists()


def test_class44_root_key_in_etc_ssl_private_is_out_of_view(
    box: Box, planted_key: tuple[str, str]
) -> None:
    name, token = planted_key
    result = box.run(
        f"cat /etc/ssl/private/{name}; cat /proc/self/root/etc/ssl/private/{name};"
        f" cat /proc/1/root/etc/ssl/private/{name}; ls -la /etc/ssl/private;"
        f" grep -r {token} /etc 2>/dev/null; test -e /etc/ssl/private || echo PRIVATE-ABSENT;"
        " ls /etc/ssl/certs | head -3"
    )
    _unreadable(result, token)
    assert "PRIVATE-ABSENT" in result.output
    assert ".pem" in result.output or ".0" in result.output  # certificates stay usable


def test_class44_shadow_sudoers_and_host_keys_are_not_in_the_view(box: Box) -> None:
    result = box.run(
        "for f in /etc/shadow /etc/gshadow /etc/shadow- /etc/sudoers /etc/sudoers.d"
        " /etc/ssh /etc/security/opasswd /etc/ssl/private /etc/pip.conf /etc/npmrc"
        " /etc/subuid /etc/environment; do"
        " cat $f /proc/self/root$f /proc/1/root$f 2>/dev/null && echo READ:$f;"
        " test -e $f && echo PRESENT:$f; done;"
        " find /etc -mindepth 1 -maxdepth 2 | sort"
    )
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith(("READ:", "PRESENT:"))] == [], lines
    allowed = {"passwd", "group", *etc_entries(Path("/etc"))}
    seen = [line.removeprefix("/etc/") for line in lines if line.startswith("/etc/")]
    for entry in seen:
        parts = Path(entry).parts
        # An allowed entry, one of its parents, or inside an allowed directory.
        assert any(entry == a or a.startswith(entry + "/") or entry.startswith(a + "/")
                   for a in allowed), f"/etc/{entry} is visible: {parts}"
    passwd = box.run("cat /etc/passwd").output
    assert len(passwd.splitlines()) <= 3, passwd  # root, the command's user, nobody


def test_class44_planted_etc_secrets_stay_out_even_when_world_readable(
    tmp_path: Path, caps: Capabilities
) -> None:
    # A stand-in /etc whose secrets are world-readable (and, when not root, ours): only the
    # allow-list keeps them out, not file permissions.
    token = "ETC-SECRET-" + secrets.token_hex(8)
    etc = tmp_path / "etc"
    planted = ["shadow", "gshadow", "sudoers", "sudoers.d/admins", "ssh/ssh_host_ed25519_key",
               "ssl/private/site.key", "pip.conf", "npmrc", "security/opasswd", "environment",
               "ld.so.preload", "gitconfig", "wgetrc", "netrc"]
    for rel in planted:
        path = etc / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{token}\n")
        path.chmod(0o644)
    (etc / "ssl" / "certs").mkdir()
    (etc / "ssl" / "certs" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nPUBLIC\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    (etc / "passwd").write_text(f"hostuser:x:1234:1234:{token}:/home/h:/bin/sh\n")
    work = tmp_path / "work"
    work.mkdir()
    sandbox = BwrapSandbox(capabilities=caps, etc_root=etc)
    result = sandbox.run(
        "cat /etc/ssl/certs/ca.pem /etc/hosts /etc/passwd; grep -rs . /etc;"
        + "".join(f" cat /etc/{rel} 2>/dev/null;" for rel in planted),
        cwd=work,
    )
    _unreadable(result, token)
    assert "PUBLIC" in result.output and "localhost" in result.output, result.output


# --- memory of the whole command --------------------------------------------------------


@pytest.fixture(params=["kernel", "polling"])
def mem_box(request: pytest.FixtureRequest, box: Box, caps: Capabilities) -> Box:
    """The box under each whole-command mechanism this machine has: a cgroup (kernel) and
    RSS polling (forced by hiding the cgroup, as on a host without one)."""
    if request.param == "kernel":
        if caps.cgroup_plan is None:
            pytest.skip(f"CANNOT EXERCISE: no usable cgroup here ({caps.cgroups.detail})")
        return box
    box.sandbox = BwrapSandbox(box.workspace,
                               capabilities=dataclasses.replace(caps, cgroup_plan=None))
    return box


def _python(code: str) -> str:
    return "python3 -c '" + code.replace("'", "'\"'\"'") + "'"


def _assert_tree_killed(result: CommandResult, marker: str, limit_mb: int = 300) -> None:
    assert result.killed_reason == f"memory limit ({limit_mb} MB for the whole command) exceeded", (
        result.killed_reason, result.output)
    assert "ALL-DONE" not in result.output
    assert not result.timed_out
    assert result.duration_ms < 20_000
    assert _host_processes_with(marker) == []


def test_class44_six_children_of_200mb_share_one_300mb_limit(mem_box: Box) -> None:
    marker = f"hog{os.getpid()}"
    child = f"import time; x = b\"\\x01\" * (200 << 20); print(\"HELD\", flush=True); time.sleep(30)  # {marker}"
    code = (
        "import subprocess, sys\n"
        f"ps = [subprocess.Popen([sys.executable, \"-c\", {child!r}]) for _ in range(6)]\n"
        "[p.wait() for p in ps]\nprint(\"ALL-DONE\")"
    )
    result = mem_box.run(_python(code), memory_mb=300, timeout_s=60)
    _assert_tree_killed(result, marker)
    if mem_box.sandbox.caps.cgroup_plan is not None:
        assert result.output.count("HELD") <= 1  # the kernel never let a second one in


def test_class44_fork_then_allocate_is_one_tree(mem_box: Box) -> None:
    marker = f"forker{os.getpid()}"
    code = (
        f"import os, sys, time  # {marker}\n"
        "for _ in range(6):\n"
        "    if os.fork() == 0:\n"
        "        x = b\"\\x02\" * (100 << 20)\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "for _ in range(6):\n"
        "    os.wait()\n"
        "print(\"ALL-DONE\")"
    )
    result = mem_box.run(_python(code), memory_mb=300, timeout_s=60)
    _assert_tree_killed(result, marker)


def test_class44_detached_daemons_still_count(mem_box: Box) -> None:
    # setsid and a double fork leave the shell's process group and session; the pid
    # namespace (and the cgroup) still hold them.
    marker = f"daemon{os.getpid()}"
    code = (
        f"import os, time  # {marker}\n"
        "for _ in range(2):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            x = b\"\\x03\" * (200 << 20)\n"
        "            time.sleep(30)\n"
        "        os._exit(0)\n"
        "time.sleep(30)\nprint(\"ALL-DONE\")"
    )
    result = mem_box.run(_python(code), memory_mb=300, timeout_s=60)
    _assert_tree_killed(result, marker)


def test_class44_memory_hidden_in_tmpfs_counts(mem_box: Box) -> None:
    # tmpfs pages are RAM that RLIMIT_AS never sees: 200 MB in /tmp, 50 in /dev/shm and
    # 150 MB in a process are 400 MB against 300.
    marker = f"tmpfsbomb{os.getpid()}"
    mem_box.sandbox.shm_size_mb = 64
    result = mem_box.run(
        "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>/dev/null;"
        " dd if=/dev/zero of=/dev/shm/fill bs=1M count=50 2>/dev/null; echo FILLED;"
        + _python(f"import time; x = b\"\\x04\" * (150 << 20); time.sleep(30)  # {marker}")
        + "; echo ALL-DONE",
        memory_mb=300, timeout_s=60,
    )
    _assert_tree_killed(result, marker)


def test_class44_tmpfs_alone_cannot_outgrow_the_memory_limit(mem_box: Box) -> None:
    # The default /tmp (256 MB) would hold 150 MB more than a 100 MB command may use.
    result = mem_box.run(
        "dd if=/dev/zero of=/tmp/fill bs=1M count=150; du -m /tmp/fill",
        memory_mb=100, timeout_s=60,
    )
    assert f"{150 * MB} bytes" not in result.output, result.output
    # The tmpfs is full (no space), or the memory cgroup refused the page (cannot
    # allocate), or the whole command was killed for its memory.
    assert (result.killed_reason is not None or "No space left on device" in result.output
            or "Cannot allocate memory" in result.output), result.output
    sizes = [int(line.split()[0]) for line in result.output.splitlines()
             if line.endswith("/tmp/fill")]
    assert all(size <= 100 for size in sizes), result.output


def test_class44_memory_limit_lets_an_honest_tree_finish(mem_box: Box) -> None:
    # Not an attack: under the limit, with copy-on-write pages shared by four forked
    # children (counted once, not five times), the command must finish untouched.
    code = (
        "import os, time\n"
        "x = b\"\\x05\" * (120 << 20)\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(1)\n"
        "        os._exit(0)\n"
        "for _ in range(4):\n"
        "    os.wait()\n"
        "print(\"ALL-DONE\")"
    )
    result = mem_box.run(_python(code), memory_mb=300, timeout_s=60)
    assert result.killed_reason is None, (result.killed_reason, result.output)
    assert "ALL-DONE" in result.output


def test_class44_limits_are_per_command_and_leave_nothing_behind(mem_box: Box) -> None:
    # A killed command leaves no cgroup or counter behind to punish the next one.
    child = "import time; x = b\"\\x06\" * (200 << 20); time.sleep(30)"
    code = (f"import subprocess, sys\nps = [subprocess.Popen([sys.executable, \"-c\", {child!r}])"
            " for _ in range(2)]\n[p.wait() for p in ps]\nprint(\"ALL-DONE\")")
    first = mem_box.run(_python(code), memory_mb=300, timeout_s=60)
    assert first.killed_reason is not None and "memory limit" in first.killed_reason
    second = mem_box.run("echo fine", memory_mb=300)
    assert second.exit_code == 0 and second.killed_reason is None, second
    plan = mem_box.sandbox.caps.cgroup_plan
    if plan is not None:
        for parent in (plan.memory_parent, plan.pids_parent):
            if parent is not None:
                assert list(parent.glob(f"codeloop-{os.getpid()}-*")) == []
