"""The Docker backend. No Docker engine runs on our machines: the end-to-end test runs only
where one is reachable and says so when it is not; the container's isolation flags and the
backend choice are checked everywhere."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codeloop.sandbox.base import Limits
from codeloop.sandbox.docker_backend import DockerSandbox, docker_argv, docker_reachable
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.sandbox.factory import choose_backend
from codeloop.workspace.factory import open_workspace


def test_container_line_isolates_the_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    argv = docker_argv("make test", ws, ws / "src", Limits(memory_mb=512, max_processes=64),
                       "img:1", "codeloop-x", (1000, 1000), {"CI": "1"})
    for flag in ("--network=none", "--cap-drop=ALL", "--security-opt=no-new-privileges",
                 "--read-only", "--pull=never", "--memory=512m", "--pids-limit=64",
                 "--user=1000:1000", f"--volume={ws}/.git:{ws}/.git:ro", "--env=CI=1"):
        assert flag in argv
    assert argv[-4:] == ["img:1", "sh", "-c", "make test"]
    assert f"--workdir={ws / 'src'}" in argv
    assert not any(a.startswith("--privileged") or "docker.sock" in a for a in argv)


def test_needs_a_private_copy(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("x")
    linked = open_workspace(repo, tmp_path / "state")
    if linked.kind == "copy":
        pytest.skip("hard-link farm unavailable here, so every workspace is a copy")
    with pytest.raises(SandboxUnavailable):
        DockerSandbox(linked)


def test_asking_for_docker_without_an_engine_is_a_clear_error() -> None:
    reachable, detail = docker_reachable()
    if reachable:
        pytest.skip(f"a Docker engine is reachable here ({detail})")
    with pytest.raises(SandboxUnavailable) as info:
        choose_backend("docker")
    assert "Docker" in info.value.message


def test_commands_run_in_a_container(tmp_path: Path) -> None:
    reachable, detail = docker_reachable()
    if not reachable:
        pytest.skip(f"NOT EXERCISED: no Docker engine is reachable on this machine ({detail})")
    image = "python:3.11-slim"
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
        pytest.skip(f"NOT EXERCISED: image {image} is not present (the backend never pulls)")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("before\n")
    ws = open_workspace(repo, tmp_path / "state", prefer="copy")
    box = DockerSandbox(ws, image)
    # No packet leaves: the only interface a network-less container has is loopback.
    out = box.run("echo after > a.txt; cat a.txt; python3 -c 'import socket; "
                  "print([n for _, n in socket.if_nameindex()])'", cwd=ws.path)
    assert "after" in out.output and "['lo']" in out.output
    assert (repo / "a.txt").read_text() == "before\n"
    slow = box.run("sleep 60", cwd=ws.path, limits=Limits(timeout_s=2))
    assert slow.timed_out
