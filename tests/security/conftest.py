"""Fixtures for the sandbox attack suite: a real repository, planted secrets, a real bwrap."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codeloop.sandbox.base import CommandResult, Limits
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.probe import Capabilities, probe
from codeloop.workspace.copy import CopyWorkspace

HERE = Path(__file__).parent
SYSTEM_PYTHON = "/usr/bin/python3"


def tree_digest(top: Path) -> str:
    """A hash of every path, mode and content under `top` (symlinks by target)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(top)):
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            full = Path(dirpath, name)
            st = full.lstat()
            h.update(f"{full.relative_to(top)}\0{st.st_mode}\0".encode())
            if full.is_symlink():
                h.update(os.readlink(full).encode())
            elif full.is_file():
                h.update(full.read_bytes())
    return h.hexdigest()


@dataclass
class Box:
    """A repository, secrets beside it, its workspace and the sandbox over it."""

    repo: Path
    secrets: Path
    token: str
    workspace: CopyWorkspace
    sandbox: BwrapSandbox

    def run(self, command: str, **limits: Any) -> CommandResult:
        lim = Limits(**{"timeout_s": 30.0, **limits})
        return self.sandbox.run(command, cwd=self.workspace.path, limits=lim)

    def probe(self, *args: str, **limits: Any) -> Any:
        result = self.run(f"{SYSTEM_PYTHON} attack_probe.py " + " ".join(args), **limits)
        assert result.exit_code == 0, result.output
        return json.loads(result.output.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def caps() -> Capabilities:
    found = probe()
    if not found.isolation_available:
        pytest.skip(
            "CANNOT EXERCISE: bwrap isolation is unavailable here "
            f"(bwrap: {found.bwrap.detail}; uid drop: {found.uid_drop.detail})"
        )
    return found


@pytest.fixture
def box(tmp_path: Path, caps: Capabilities, monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    token = "SECRET-" + os.urandom(8).hex()
    # A secret in the host process environment: bwrap must not carry it in (pitfall 1).
    monkeypatch.setenv("CODELOOP_TEST_SECRET", token)
    secrets = tmp_path / "secrets"
    (secrets / ".ssh").mkdir(parents=True)
    (secrets / ".aws").mkdir()
    (secrets / ".env").write_text(f"API_KEY={token}\n")
    (secrets / ".ssh" / "id_ed25519").write_text(f"-----BEGIN KEY-----\n{token}\n")
    (secrets / ".aws" / "credentials").write_text(f"aws_secret_access_key={token}\n")
    repo = tmp_path / "repo"
    (repo / ".git" / "hooks").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (repo / "hello.txt").write_text("hello\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('app')\n")
    shutil.copy(HERE / "attack_probe.py", repo / "attack_probe.py")
    before = {p: tree_digest(p) for p in (repo, secrets)}
    workspace = CopyWorkspace(repo, tmp_path / "state")
    yield Box(repo, secrets, token, workspace, BwrapSandbox(workspace, capabilities=caps))
    for path, digest in before.items():
        assert tree_digest(path) == digest, f"{path} changed during the attack"


@pytest.fixture
def system_python(caps: Capabilities) -> str:
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"CANNOT EXERCISE: {SYSTEM_PYTHON} is missing; the probes need it")
    return SYSTEM_PYTHON

