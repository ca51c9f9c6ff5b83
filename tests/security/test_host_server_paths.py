"""SECURITY.md (48): a server opening sessions on any path a client names. Against the real
app (FastAPI TestClient, real repositories, the real sandbox): a repository outside the
allowed roots, a 0700 directory, `..`, a symlink out of a root, a relative path, applying
into a path outside, are refused with 403 and touch nothing; the data directory and its
files are private; a non-loopback bind needs --allow-remote."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from codeloop.server.app import create_app
from codeloop.server.auth import TokenStore
from tests.server.conftest import DEFAULTS, Api, write_script
from tests.session.helpers import BUGGY, FIXED, make_repo

pytestmark = pytest.mark.security

SECRET = "root-only-secret-0123456789"


def tree_digest(root: Path) -> str:
    """A digest of every file's path, mode and bytes under `root` (what an attack could change)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            h.update(f"{path.relative_to(root)}:{path.lstat().st_mode}\0".encode())
            if not path.is_symlink():
                h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """An allowed root with a repository, and outside it a repository with a secret, a 0700
    directory holding another, and the server's data directory."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = make_repo(outside)
    (victim / "SECRET.txt").write_text(SECRET + "\n")
    (victim / ".codeloop").mkdir()
    (victim / ".codeloop" / "config.toml").write_text("this is [not toml\n")  # read = 400
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    make_repo(private)
    private.chmod(0o700)
    return {"allowed": allowed, "repo": make_repo(allowed), "outside": outside,
            "victim": victim, "private": private / "repo", "data": tmp_path / "data",
            "tmp": tmp_path}


@pytest.fixture
def start(layout: dict[str, Path]) -> Iterator[Callable[..., Api]]:
    """Start the real app on the data dir with the given allowed roots (as the admin)."""
    clients: list[TestClient] = []

    def run(roots: list[Path], **kw: Any) -> Api:
        app = create_app(layout["data"], allowed_roots=roots, defaults=DEFAULTS, **kw)
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return Api(client, TokenStore(layout["data"]).admin_token)

    yield run
    for client in reversed(clients):
        client.__exit__(None, None, None)


def _refused(api: Api, repo: str, layout: dict[str, Path]) -> None:
    script = write_script(layout["tmp"] / "script.json")
    before = tree_digest(layout["outside"])
    response = api.post("/sessions", json={"task": "read it", "repo": repo,
                                           "model": f"scripted:{script}"})
    assert response.status_code == 403, (repo, response.text)
    detail = response.json()["detail"]
    assert str(layout["allowed"]) in detail, detail  # names the allowed roots
    assert SECRET not in response.text
    assert api.ok("get", "/sessions") == []
    assert not (layout["data"] / "sessions").exists() or not any(
        (layout["data"] / "sessions").iterdir())
    assert tree_digest(layout["outside"]) == before


def test_a_repository_outside_the_roots_is_refused_before_anything_reads_it(
        start: Callable[..., Api], layout: dict[str, Path]) -> None:
    api = start([layout["allowed"]])
    _refused(api, str(layout["victim"]), layout)
    _refused(api, "/", layout)
    _refused(api, str(layout["tmp"]), layout)  # a parent of the root is not inside it


def test_a_root_only_0700_directory_is_refused(start: Callable[..., Api],
                                               layout: dict[str, Path]) -> None:
    api = start([layout["allowed"]])
    _refused(api, str(layout["private"]), layout)
    if Path("/root").is_dir():
        _refused(api, "/root", layout)


def test_dotdot_traversal_is_refused(start: Callable[..., Api], layout: dict[str, Path]) -> None:
    api = start([layout["allowed"]])
    _refused(api, f"{layout['allowed']}/../outside/repo", layout)
    _refused(api, f"{layout['repo']}/../../outside/repo", layout)


def test_a_symlink_in_a_root_pointing_out_is_refused(start: Callable[..., Api],
                                                     layout: dict[str, Path]) -> None:
    (layout["allowed"] / "link").symlink_to(layout["victim"])
    (layout["allowed"] / "dir").symlink_to(layout["outside"])
    api = start([layout["allowed"]])
    _refused(api, str(layout["allowed"] / "link"), layout)
    _refused(api, str(layout["allowed"] / "dir" / "repo"), layout)


def test_a_relative_path_is_refused(start: Callable[..., Api], layout: dict[str, Path],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(layout["outside"])  # where a relative path would land on the server
    api = start([layout["allowed"]])
    _refused(api, "repo", layout)
    _refused(api, ".", layout)


def test_a_session_cannot_apply_outside_once_its_root_is_gone(
        start: Callable[..., Api], layout: dict[str, Path]) -> None:
    """A session made inside a root; the server restarts without that root: its diff and
    apply are refused and the repository is unchanged."""
    first = start([layout["allowed"]])
    sid = first.create(layout["repo"], write_script(layout["tmp"] / "script.json"))
    first.wait_status(sid, "finished")
    second = start([layout["outside"]])
    for method, url in (("post", f"/sessions/{sid}/apply"), ("get", f"/sessions/{sid}/diff")):
        response = getattr(second, method)(url)
        assert response.status_code == 403, response.text
    assert (layout["repo"] / "calc.py").read_text() == BUGGY


def test_apply_does_not_follow_a_repository_swapped_for_a_link_out(
        start: Callable[..., Api], layout: dict[str, Path]) -> None:
    """After the session, its repository directory is replaced by a symlink to a copy
    outside the roots: apply must not write through it."""
    api = start([layout["allowed"]])
    repo = layout["repo"]
    sid = api.create(repo, write_script(layout["tmp"] / "script.json"))
    api.wait_status(sid, "finished")
    before = tree_digest(layout["outside"])
    repo.rename(repo.with_name("moved"))
    repo.symlink_to(layout["victim"])
    response = api.post(f"/sessions/{sid}/apply")
    assert response.status_code == 403, response.text
    assert (layout["victim"] / "calc.py").read_text() == BUGGY
    assert tree_digest(layout["outside"]) == before
    assert (repo.with_name("moved") / "calc.py").read_text() == BUGGY


def test_a_repository_inside_a_root_still_works(start: Callable[..., Api],
                                                layout: dict[str, Path]) -> None:
    api = start([layout["allowed"]])
    sid = api.create(layout["repo"], write_script(layout["tmp"] / "script.json"))
    api.wait_status(sid, "finished")
    assert api.ok("post", f"/sessions/{sid}/apply")["applied"] == ["calc.py"]
    assert (layout["repo"] / "calc.py").read_text() == FIXED


# -- the data directory and its files are private -----------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_dir_and_its_files_are_private(start: Callable[..., Api],
                                                  layout: dict[str, Path]) -> None:
    api = start([layout["allowed"]])
    sid = api.create(layout["repo"], write_script(layout["tmp"] / "script.json"))
    api.wait_status(sid, "finished")
    TokenStore(layout["data"]).create("alice")
    data = layout["data"]
    assert _mode(data) == 0o700
    files = ["events.sqlite", "server-token", "tokens.json"]
    files += [n for n in ("events.sqlite-wal", "events.sqlite-shm") if (data / n).exists()]
    assert "events.sqlite-wal" in files  # WAL mode: the log's tail lives there
    for name in files:
        assert _mode(data / name) == 0o600, name


def test_an_existing_loose_data_dir_is_tightened_with_a_note(
        layout: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    data = layout["data"]
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    sqlite3.connect(data / "events.sqlite").close()
    (data / "server-token").write_text("t0ken\n")
    (data / "tokens.json").write_text("{}\n")
    for name in ("events.sqlite", "server-token", "tokens.json"):
        (data / name).chmod(0o644)
    with caplog.at_level(logging.WARNING):
        create_app(data, allowed_roots=[layout["allowed"]], defaults=DEFAULTS)
    assert _mode(data) == 0o700
    for name in ("events.sqlite", "server-token", "tokens.json"):
        assert _mode(data / name) == 0o600, name
    assert "was mode 0755; made it 0700" in caplog.text


def _cli(*args: str, cwd: Path, tmp: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CODELOOP_DATA_DIR", "XDG_DATA_HOME")}
    env.update({"XDG_CONFIG_HOME": str(tmp / "config"), "HOME": str(tmp),
                "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                               str(Path(__file__).parents[2])])})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_cli_makes_the_data_dir_private_too(layout: dict[str, Path]) -> None:
    data, loose = layout["data"], layout["tmp"] / "loose"
    made = _cli("token", "alice", "--data-dir", str(data), cwd=layout["tmp"], tmp=layout["tmp"])
    assert made.returncode == 0, made.stderr
    assert _mode(data) == 0o700
    assert _mode(data / "tokens.json") == 0o600 and _mode(data / "server-token") == 0o600
    listed = _cli("sessions", cwd=layout["tmp"], tmp=layout["tmp"])  # opens the event store
    assert listed.returncode == 0, listed.stderr
    store = layout["tmp"] / ".local" / "share" / "codeloop"
    assert _mode(store) == 0o700 and _mode(store / "events.sqlite") == 0o600
    loose.mkdir(mode=0o777)
    loose.chmod(0o777)
    again = _cli("token", "bob", "--data-dir", str(loose), cwd=layout["tmp"], tmp=layout["tmp"])
    assert again.returncode == 0 and _mode(loose) == 0o700
    assert "was mode 0777; made it 0700" in again.stderr


# -- binding beyond loopback needs --allow-remote ----------------------------------------

@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "myhost.example"])
def test_a_non_loopback_bind_is_refused_without_allow_remote(host: str,
                                                             layout: dict[str, Path]) -> None:
    data = layout["data"]
    proc = _cli("serve", "--host", host, "--port", "0", "--data-dir", str(data),
                cwd=layout["allowed"], tmp=layout["tmp"], timeout=20)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "--allow-remote" in proc.stderr and host in proc.stderr
    assert "codeloop server on" not in proc.stdout
    assert not data.exists()  # refused before anything was made, let alone bound


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_need_nothing(host: str) -> None:
    from codeloop.cli.server_cmds import is_loopback

    assert is_loopback(host)
