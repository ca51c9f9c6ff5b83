"""A command held until its processes have joined their cgroup runs only on an explicit
go-ahead: bwrap takes the end of its block pipe (codeloop killed meanwhile) for one too."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from codeloop.sandbox.probe import DEFAULT_SANDBOX_UID, Capabilities

# The stand-in for codeloop: starts bwrap held on both pipes, then lets it go or dies.
_LAUNCHER = """
import os, signal, subprocess, sys, time
from pathlib import Path
from codeloop.sandbox.bwrap_binary import find_bwrap
from codeloop.sandbox.bwrap_profile import Profile, WorkspaceMount, bwrap_argv
from codeloop.sandbox.seccomp_filter import program_fd, seccomp_program

work, mode, drop = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "drop"
gate, go = os.pipe(), os.pipe()
seccomp = program_fd(seccomp_program(allow_unix_sockets=False))
profile = Profile(WorkspaceMount(work, work, bind_writable=True), work, {}, seccomp, 8, 8,
                  drop_to=(int(sys.argv[4]),) * 2 if drop else None,
                  block_fd=gate[0], go_fd=go[0])
argv = bwrap_argv(str(find_bwrap()), profile, "echo ran > marker")
child = subprocess.Popen(argv, pass_fds=(seccomp, gate[0], go[0]))
time.sleep(0.5)
if mode == "die":
    os.kill(os.getpid(), signal.SIGKILL)
os.write(gate[1], b"go")
os.write(go[1], b"go\\n")
sys.exit(child.wait(30))
"""



def _launch(work: Path, mode: str, caps: Capabilities) -> subprocess.CompletedProcess[str]:
    work.chmod(0o777)  # the sandbox uid writes the marker under root
    drop = "drop" if caps.running_as_root else "user"
    return subprocess.run([sys.executable, "-c", _LAUNCHER, str(work), mode, drop,
                           str(DEFAULT_SANDBOX_UID)], capture_output=True, text=True,
                          timeout=60, check=False)


def test_a_held_command_runs_once_let_go(tmp_path: Path, caps: Capabilities) -> None:
    done = _launch(tmp_path, "go", caps)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "marker").read_text() == "ran\n"


def test_a_held_command_never_runs_when_codeloop_dies_before_letting_it_go(
        tmp_path: Path, caps: Capabilities) -> None:
    # The pipes' write ends close with the killed process; bwrap reads that as "go" and
    # went on, and the command ran with no one to stop it at its time limit.
    done = _launch(tmp_path, "die", caps)
    assert done.returncode == -9, done.stderr
    time.sleep(2)  # bwrap sets up and the command would have run by now
    assert not (tmp_path / "marker").exists()
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit()
                and _cmdline(p).startswith("/bin/sh -c echo ran > marker")]


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
