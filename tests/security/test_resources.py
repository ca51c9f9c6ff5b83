"""Resources: cases 28-34 and pitfalls 4 and 6 (tmpfs is RAM that RLIMIT_AS does not count)."""

from __future__ import annotations

import json
import os
import resource
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeloop.sandbox.base import CommandResult
from codeloop.sandbox.bwrap_profile import SYSTEM_PYTHON
from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID
from codeloop.sandbox.user_tasks import tasks_of

from .conftest import Box

# One xdist worker runs these in turn: RLIMIT_NPROC counts every task of the uid, so a fork
# bomb on one worker would eat into the 64-task limit of another's command started before it.
pytestmark = [pytest.mark.security, pytest.mark.xdist_group("process-limits")]


def _host_processes_with(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


@contextmanager
def _threads_of_the_user(count: int) -> Iterator[threading.Event]:
    """`count` idle threads of this process (tasks of the user) until the event is set or
    the block ends."""
    release = threading.Event()
    threads = [threading.Thread(target=release.wait, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield release
    finally:
        release.set()
        for thread in threads:
            thread.join()


def test_case28_pitfall4_fork_bomb_hits_the_process_limit(box: Box) -> None:
    out = box.probe("fork", max_processes=64, timeout_s=60)
    assert out["forked"] < 64, out
    assert out["error"], out
    assert out["uid"] != 0 or os.geteuid() != 0  # RLIMIT_NPROC binds only non-root


def test_case28_the_users_own_tasks_do_not_count_against_a_command(box: Box) -> None:
    # RLIMIT_NPROC counts every task of the user: with more threads of its own than the
    # command's limit, bwrap itself failed to start ("Creating new namespace failed").
    if os.geteuid() == 0:
        pytest.skip("CANNOT EXERCISE: RLIMIT_NPROC does not bind root (run as a user)")
    with _threads_of_the_user(80):
        result = box.run("echo started", max_processes=64)
        assert result.exit_code == 0 and "started" in result.output, result.output
        out = box.probe("fork", max_processes=64, timeout_s=60)
        assert out["forked"] < 64 and out["error"], out


def test_case28_tasks_of_the_user_that_end_give_a_command_no_more_processes(box: Box) -> None:
    # The outer limit is what the uid ran at the start plus max_processes: when 60 of the
    # user's threads ended while the command ran, its fork bomb made 123 processes (CI saw
    # 66 as tasks of earlier tests ended). The limit set in its user namespace is exact.
    if os.geteuid() == 0:
        pytest.skip("CANNOT EXERCISE: RLIMIT_NPROC does not bind root (run as a user)")
    with _threads_of_the_user(60) as release:
        # Released once the command's limits are set, before it forks.
        timer = threading.Timer(0.7, release.set)
        timer.start()
        try:
            result = box.run(f"sleep 2; {SYSTEM_PYTHON} attack_probe.py fork",
                             max_processes=64, timeout_s=60)
        finally:
            timer.cancel()
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.strip().splitlines()[-1])
    assert out["forked"] < 64 and out["error"], out


def test_case28_a_parallel_build_has_room_under_the_default_limit(box: Box) -> None:
    # The limit counts threads: at the old default of 256 tasks, exact in a user namespace,
    # a build with a thread per core in each of its processes failed to start threads.
    threads = 300  # each reserves an 8 MB stack: 600 would pass the 4 GB address space limit
    script = ("import threading; e = threading.Event(); "
              f"ts = [threading.Thread(target=e.wait, args=(20,)) for _ in range({threads})]; "
              "[t.start() for t in ts]; print('started', len(ts)); e.set(); "
              "[t.join() for t in ts]")
    result = box.run(f"{SYSTEM_PYTHON} -c \"{script}\"", timeout_s=60)
    assert result.exit_code == 0 and f"started {threads}" in result.output, result.output


def test_case28_other_commands_of_the_sandbox_uid_do_not_count_against_a_command(
        box: Box) -> None:
    # As root every command runs as the one sandbox uid, and RLIMIT_NPROC counts all of that
    # uid's tasks: a session's test run holding tasks starved every other session's commands.
    if os.geteuid() != 0:
        pytest.skip("CANNOT EXERCISE: commands share a sandbox uid only under root")
    held: dict[str, CommandResult] = {}
    nap = _nap()
    holder = threading.Thread(target=lambda: held.update(result=box.run(
        f"for i in $(seq 40); do sleep {nap} & done; wait", max_processes=64, timeout_s=60)))
    holder.start()
    try:
        deadline = time.monotonic() + 30
        while tasks_of(DEFAULT_SANDBOX_UID) < 40:
            assert time.monotonic() < deadline, "the holding command never started its tasks"
            time.sleep(0.1)
        result = box.run("for i in $(seq 20); do sleep 0.2 & done; wait; echo all-started",
                         max_processes=32, timeout_s=30)
        assert result.exit_code == 0 and "all-started" in result.output, result.output
    finally:
        for pid in _sandbox_sleepers(nap):
            os.kill(pid, signal.SIGKILL)
        holder.join()


def _nap() -> str:
    """A sleep length no other test's command uses, so only ours are found and killed."""
    return f"19.{os.getpid() % 1000:03d}"


def _sandbox_sleepers(nap: str) -> list[int]:
    """The holding command's `sleep NAP` processes (run as the sandbox uid)."""
    wanted = f"sleep\0{nap}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and entry.stat().st_uid == DEFAULT_SANDBOX_UID
                    and (entry / "cmdline").read_bytes() == wanted):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_case28_shell_fork_bomb_is_contained(box: Box) -> None:
    # A bomb bounded at 2**9 shells, so that even a broken sandbox could not take down a
    # shared machine; the 64-process limit must stop it long before.
    marker = f"bomb{os.getpid()}"
    result = box.run(
        f"{marker}() {{ if [ $1 -gt 0 ]; then {marker} $(($1-1)) & {marker} $(($1-1)); fi;"
        f" sleep 3; }}; {marker} 9; wait",
        max_processes=64,
        timeout_s=30,
    )
    assert (
        "fork" in result.output.lower()
        or "resource temporarily unavailable" in result.output.lower()
    )
    assert _host_processes_with(marker) == []


def test_case29_memory_bomb_fails(box: Box) -> None:
    result = box.run("python3 -c 'x = bytearray(2 * 1024**3); print(\"ALLOCATED\")'", memory_mb=512)
    assert "ALLOCATED" not in result.output
    assert "MemoryError" in result.output


def test_case30_pitfall6_tmpfs_is_sized(box: Box) -> None:
    box.sandbox.tmp_size_mb = 16
    box.sandbox.shm_size_mb = 8
    result = box.run(
        "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1 | head -1;"
        " dd if=/dev/zero of=/dev/shm/fill bs=1M count=64 2>&1 | head -1;"
        " dd if=/dev/zero of=/fill bs=1M count=1 2>&1 | tail -1;"
        " dd if=/dev/zero of=/dev/fill bs=1M count=1 2>&1 | tail -1;"
        " du -sm /tmp/fill /dev/shm/fill"
    )
    assert result.output.count("No space left on device") == 2, result.output
    assert result.output.count("Read-only file system") == 2, result.output
    sizes = [int(line.split()[0]) for line in result.output.splitlines()[-2:]]
    assert sizes[0] <= 16 and sizes[1] <= 8


def test_case31_disk_fill_and_zip_bomb_hit_the_file_size_limit(box: Box) -> None:
    result = box.run(
        "dd if=/dev/zero of=big bs=1M count=64 2>&1 | tail -1; ls -la big;"
        " python3 -c \"import zipfile; z = zipfile.ZipFile('/tmp/b.zip', 'w', zipfile.ZIP_DEFLATED);"
        " z.writestr('bomb', b'0' * (1 << 26)); z.close()\";"
        " python3 -c \"import zipfile; zipfile.ZipFile('/tmp/b.zip').extractall('out')\"; echo rc=$?;"
        " ls -la out",
        max_file_mb=8,
    )
    assert "File size limit exceeded" in result.output or "rc=153" in result.output, result.output
    sizes = [int(p.split()[4]) for p in result.output.splitlines() if p.startswith("-")]
    assert sizes and max(sizes) <= 8 << 20


def test_case32_cpu_spin_and_sleep_forever_are_stopped(box: Box) -> None:
    spin = box.run("while :; do :; done", timeout_s=2)
    assert spin.timed_out and spin.exit_code is None and spin.killed_reason == "timeout"
    capped = box.run("python3 -c 'while True: pass'", cpu_s=1, timeout_s=30)
    assert not capped.timed_out
    assert capped.exit_code != 0
    # Killed by the limit below the shell: named, so a test runner's crash is not a mystery.
    assert capped.killed_reason is not None and "SIGXCPU" in capped.killed_reason
    sleeper = box.run("sleep 100000", timeout_s=1)
    assert sleeper.timed_out
    assert _host_processes_with("sleep 100000") == []


def test_case33_daemons_do_not_outlive_the_command(box: Box) -> None:
    marker = f"31337.{os.getpid()}"
    result = box.run(
        f"setsid nohup sleep {marker} >/dev/null 2>&1 & "
        f"(sh -c 'sleep {marker}1 &' &); "
        f'python3 -c "import os, time\nif os.fork() == 0:\n  os.setsid()\n  if os.fork() == 0:\n'
        f"    os.execvp('sleep', ['sleep', '{marker}2'])\"; echo started"
    )
    assert "started" in result.output
    assert _host_processes_with(marker) == []
    timed = box.run(f"setsid nohup sleep {marker}3 >/dev/null 2>&1 & sleep 60", timeout_s=1)
    assert timed.timed_out
    assert _host_processes_with(marker) == []


def test_case34_output_flood_keeps_head_and_tail(box: Box) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = box.run(
        "echo HEAD-MARK; head -c 100000000 /dev/zero | tr '\\0' a; echo; echo TAIL-MARK",
        max_output_bytes=4096,
    )
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.exit_code == 0
    assert result.truncated
    assert result.output_bytes > 100_000_000
    assert result.output.startswith("HEAD-MARK")
    assert result.output.rstrip().endswith("TAIL-MARK")
    assert len(result.output) < 4096 + 200
    assert grown_mb < 50  # streamed, never held whole
