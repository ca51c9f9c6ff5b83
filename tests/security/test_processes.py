"""Processes and the terminal: cases 21-25 and pitfalls 1, 2 and 4."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID

from .conftest import Box

pytestmark = pytest.mark.security

BLOCKED = {errno.EPERM, errno.ENOSYS}


def test_case21_pitfall1_host_environment_never_enters(box: Box) -> None:
    assert os.environ["CODELOOP_TEST_SECRET"] == box.token
    result = box.run(
        "env; cat /proc/1/environ; for p in /proc/[0-9]*; do cat $p/environ; done; true"
    )
    assert box.token not in result.output
    assert "CODELOOP_TEST_SECRET" not in result.output


def test_case21_only_explicit_variables_are_passed(box: Box) -> None:
    result = box.sandbox.run("env", cwd=box.workspace.path, env={"ALLOWED": "yes"})
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert "ALLOWED" in names
    assert names <= {
        "ALLOWED",
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TERM",
        "PWD",
        "SHLVL",
        "_",
        "PYTHONDONTWRITEBYTECODE",
        "NO_COLOR",
        "OLDPWD",
    }


def test_case22_ptrace_and_process_vm_are_denied(box: Box) -> None:
    out = box.probe("syscalls")
    if isinstance(out, dict):
        pytest.skip(f"CANNOT EXERCISE: {out['skip']}")
    by_name = {r["name"]: r for r in out}
    for name in ("ptrace", "process_vm_readv", "process_vm_writev"):
        assert by_name[name]["ret"] == -1 and by_name[name]["errno"] == errno.EPERM, by_name[name]


def test_case22_host_processes_cannot_be_signalled(box: Box, tmp_path: Path) -> None:
    # The broadcast uses SIGURG, ignored by default, so that even a broken sandbox would
    # not hurt other processes on the machine; the victim records any it receives.
    marker = tmp_path / "signals"
    victim = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "def note(n, _f):\n"
            f"    open({str(marker)!r}, 'a').write(str(n))\n"
            "signal.signal(signal.SIGURG, note)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert victim.stdout is not None and victim.stdout.readline() == b"ready\n"
        box.run(f"kill -URG -1; kill -URG {victim.pid}; kill -9 {victim.pid}; true")
        assert victim.poll() is None  # still alive
        assert not marker.exists()  # and never signalled
    finally:
        victim.kill()
        victim.wait()


def test_case23_namespace_and_kernel_interfaces_are_denied(box: Box) -> None:
    out = box.probe("syscalls")
    if isinstance(out, dict):
        pytest.skip(f"CANNOT EXERCISE: {out['skip']}")
    for entry in out:
        if entry["name"] in ("ptrace", "process_vm_readv", "process_vm_writev"):
            continue
        assert entry["ret"] == -1, entry
        assert entry["errno"] in BLOCKED, entry
    clone3 = next(e for e in out if e["name"] == "clone3")
    assert clone3["errno"] == errno.ENOSYS
    result = box.run("unshare -U id && echo NESTED; unshare -r id && echo NESTED; true")
    assert "NESTED" not in result.output


def test_case24_setuid_binaries_gain_nothing(box: Box) -> None:
    result = box.run(
        "grep NoNewPrivs /proc/self/status; mount -t tmpfs none /tmp && echo MOUNTED;"
        " su -c id root </dev/null && echo SU-OK; id -u; true"
    )
    assert "NoNewPrivs:\t1" in result.output
    assert "MOUNTED" not in result.output and "SU-OK" not in result.output
    assert result.output.strip().splitlines()[-1] != "0" or os.geteuid() != 0


def test_case25_pitfall2_terminal_injection_is_denied(box: Box) -> None:
    out = box.probe("syscalls")
    if isinstance(out, dict):
        pytest.skip(f"CANNOT EXERCISE: {out['skip']}")
    ioctls = [e for e in out if str(e["name"]).startswith("ioctl")]
    assert len(ioctls) == 9
    for entry in ioctls:
        assert entry["ret"] == -1 and entry["errno"] == errno.EPERM, entry


def test_pitfall2_command_runs_in_its_own_session_without_a_terminal(box: Box) -> None:
    result = box.run(
        "python3 -c 'import os; print(os.getsid(0))';"
        " python3 -c 'import os; os.open(\"/dev/tty\", os.O_RDWR)' 2>&1 | tail -1"
    )
    lines = result.output.strip().splitlines()
    # getsid reports 0 when the session leader lives outside the sandbox's pid namespace,
    # which is what happens without --new-session.
    assert int(lines[0]) > 0
    assert "Errno 6" in lines[1]  # ENXIO: no controlling terminal to write into


def test_pitfall4_root_drops_to_an_unprivileged_uid(box: Box) -> None:
    result = box.run("id -u; grep -E '^(Uid|CapEff|CapBnd)' /proc/self/status")
    uid = int(result.output.splitlines()[0])
    assert uid != 0 or os.geteuid() != 0
    if os.geteuid() == 0:
        assert uid == DEFAULT_SANDBOX_UID
        assert f"Uid:\t{DEFAULT_SANDBOX_UID}\t{DEFAULT_SANDBOX_UID}" in result.output
    else:
        assert uid == os.geteuid()
    # No capability survives, not even in the bounding set (class 44).
    assert "CapEff:\t0000000000000000" in result.output
    assert "CapBnd:\t0000000000000000" in result.output


def test_kernel_tunables_and_logs_stay_out_of_reach(box: Box) -> None:
    # The command holds no capability; it must not reach host-wide knobs either.
    # The values written are harmless even if a write got through: the current core
    # pattern, and sysrq "h" (print help).
    core_pattern = Path("/proc/sys/kernel/core_pattern").read_text()
    result = box.run(
        f"printf '%s' '{core_pattern.strip()}' > /proc/sys/kernel/core_pattern && echo WROTE-CORE;"
        " echo 1 > /proc/sys/vm/drop_caches && echo WROTE-VM;"
        " echo h > /proc/sysrq-trigger && echo WROTE-SYSRQ;"
        " dmesg >/dev/null 2>&1 && echo READ-DMESG; ls /sys >/dev/null 2>&1 && echo SYS-VISIBLE; true"
    )
    for marker in ("WROTE-CORE", "WROTE-VM", "WROTE-SYSRQ", "READ-DMESG", "SYS-VISIBLE"):
        assert marker not in result.output
    assert Path("/proc/sys/kernel/core_pattern").read_text() == core_pattern
