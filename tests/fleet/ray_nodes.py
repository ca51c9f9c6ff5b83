"""A throw-away two-node Ray cluster on this machine for tests and benchmarks.

Each node is a `ray start --block` process in its own session, so its daemons share one
process group: teardown kills exactly those groups (never `ray stop`, which would stop every
helper's cluster on the machine). Temp dirs are short (Ray's unix sockets live there)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# One token per test process: Ray's driver caches the token it first loads.
TOKEN = secrets.token_hex(32)


class NoRay(Exception):
    """Ray is not installed or its nodes did not come up."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ray_cli() -> str:
    found = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if found is None:
        raise NoRay("the ray command is not installed (pip install 'ray[default]')")
    return found


class LocalRayCluster:
    """A head node and `workers` worker nodes, 1 CPU each; `address` is the head's GCS."""

    def __init__(self, workers: int = 1, cpus: int = 1) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="clr", dir="/tmp"))
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cpus = cpus
        self.nodes: list[subprocess.Popen[bytes]] = []
        env = dict(os.environ)
        # Workers import codeloop (and tests' helpers) from this checkout.
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env.pop("RAY_ADDRESS", None)
        # A private token: Ray would otherwise fall back to ~/.ray/auth_token, shared by every
        # cluster on the machine. The driver needs the same two variables (`driver_env`).
        env.pop("RAY_AUTH_TOKEN_PATH", None)
        self.driver_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN}
        env.update(self.driver_env)
        self.env = env
        try:
            self._start(["--head", f"--port={self.port}", "--include-dashboard=false"], "head")
            self._wait_for_nodes(1)
            for index in range(workers):
                self.add_worker(f"worker{index}")
        except BaseException:
            self.close()
            raise

    def _start(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        log = (self.root / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [_ray_cli(), "start", *args, f"--num-cpus={self.cpus}", "--disable-usage-stats",
             f"--temp-dir={self.root}", "--block"],
            stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.root,
            start_new_session=True)
        log.close()
        self.nodes.append(proc)
        return proc

    def add_worker(self, name: str) -> subprocess.Popen[bytes]:
        """Start one more worker node joined to the head; returns its `ray start` process."""
        proc = self._start([f"--address={self.address}"], name)
        self._wait_for_nodes(len(self.nodes))
        return proc

    def _wait_for_nodes(self, count: int, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.nodes:
                if proc.poll() is not None:
                    raise NoRay(f"a ray node exited with {proc.returncode}; see {self.root}/*.log")
            if self.alive_nodes() >= count:
                return
            time.sleep(0.5)
        raise NoRay(f"{count} ray nodes did not come up in {timeout:.0f} s; see {self.root}")

    def alive_nodes(self) -> int:
        """How many raylets have registered (read from the raylet processes we own)."""
        count = 0
        for proc in self.nodes:
            if proc.poll() is None and _group_has(proc.pid, "raylet"):
                count += 1
        return count

    def kill_node(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL every process of one node (its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def close(self) -> None:
        """Kill our nodes, then any straggler whose command line names our temp dir."""
        for proc in reversed(self.nodes):
            self.kill_node(proc)
        self.nodes.clear()
        deadline = time.monotonic() + 10
        while (left := _pids_naming(self.root)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)


def _pids_naming(root: Path) -> list[int]:
    """Processes whose command line contains `root` (a temp dir only our nodes use)."""
    needle = str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _group_has(pgid: int, comm: str) -> bool:
    """Whether process group `pgid` has a process named `comm` (read from /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if name == comm and int(fields[2]) == pgid:
            return True
    return False


def wait_for_alive_nodes(count: int, timeout: float = 60.0) -> None:
    """Wait (as a connected driver) until `count` nodes have registered with the head."""
    import ray

    deadline = time.monotonic() + timeout
    while sum(1 for node in ray.nodes() if node["Alive"]) < count:
        if time.monotonic() > deadline:
            raise NoRay(f"{count} ray nodes did not register in {timeout:.0f} s")
        time.sleep(0.3)
