"""A Docker backend: one throw-away container per command, for hosts where a Docker engine
is reachable (bwrap stays the default where it works).

Docker cannot stack an overlay on one bind mount, so this backend needs a workspace that is
a private copy (`kind == "copy"`): in-place writes by the command then touch only the copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from codeloop.sandbox.base import CommandResult, Limits
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.sandbox.process import run_process
from codeloop.workspace.hostfs import SafeRoot

DEFAULT_IMAGE = "python:3.11-slim"


def docker_reachable(timeout_s: float = 5.0) -> tuple[bool, str]:
    """Whether a Docker engine answers, and what it said."""
    docker = shutil.which("docker")
    if docker is None:
        return False, "no docker client on PATH"
    try:
        proc = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"],
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return False, "docker info timed out"
    if proc.returncode != 0:
        return False, (proc.stderr.strip().splitlines() or ["no engine"])[-1]
    return True, f"engine {proc.stdout.strip()}"


def docker_argv(command: str, workspace_path: Path, cwd: Path, limits: Limits, image: str,
                name: str, user: tuple[int, int], env: dict[str, str] | None = None) -> list[str]:
    """The `docker run` line: no network, no capabilities, read-only root, limits.

    The command runs as the owner of the workspace copy, so it can write the copy without
    any capability (with every capability dropped, even uid 0 cannot override permissions).
    """
    argv = [
        "docker", "run", "--rm", "--pull=never", f"--name={name}",
        "--network=none", "--cap-drop=ALL", "--security-opt=no-new-privileges",
        "--read-only", "--tmpfs=/tmp:rw,nosuid,nodev,size=512m",
        "--tmpfs=/dev/shm:rw,nosuid,nodev,size=64m",
        f"--memory={limits.memory_mb}m", f"--memory-swap={limits.memory_mb}m",
        f"--pids-limit={limits.max_processes}",
        f"--ulimit=nofile={limits.max_open_files}:{limits.max_open_files}",
        f"--ulimit=fsize={limits.max_file_mb * 1024 * 1024}:{limits.max_file_mb * 1024 * 1024}",
        f"--ulimit=cpu={limits.cpu_seconds}:{limits.cpu_seconds + 5}",  # SIGXCPU before SIGKILL
        f"--user={user[0]}:{user[1]}", "--env=HOME=/tmp",
        f"--volume={workspace_path}:{workspace_path}:rw",
    ]
    git_dir = workspace_path / ".git"
    if SafeRoot(workspace_path).is_dir(".git"):  # a link there is never bound
        argv.append(f"--volume={git_dir}:{git_dir}:ro")
    for key, value in (env or {}).items():
        argv.append(f"--env={key}={value}")
    argv += [f"--workdir={cwd}", image, "sh", "-c", command]
    return argv


class DockerSandbox:
    """Runs each command in a fresh container over the session's private copy."""

    name = "docker"

    def __init__(self, workspace: Any, image: str = DEFAULT_IMAGE) -> None:
        if getattr(workspace, "kind", None) != "copy":
            raise SandboxUnavailable(
                "the Docker backend needs a copy workspace",
                "open the workspace with prefer='copy' (the session does this for docker)",
            )
        self.workspace = workspace
        self.image = image

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        lim = limits or Limits()
        name = f"codeloop-{uuid.uuid4().hex[:12]}"
        root = Path(self.workspace.path)
        owner = root.stat()
        argv = docker_argv(command, root, cwd, lim, self.image, name,
                           (owner.st_uid, owner.st_gid), env)
        outcome = run_process(argv, cwd=cwd, env={"PATH": os.environ.get("PATH", "/usr/bin")},
                              timeout_s=lim.timeout_s, max_output_bytes=lim.max_output_bytes)
        # Killing the client does not stop the container: remove it whatever happened.
        subprocess.run(["docker", "rm", "--force", name], capture_output=True, check=False,
                       timeout=30)
        return outcome.result(self.name)
