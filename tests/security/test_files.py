"""Files and paths from inside a command: SECURITY.md cases 3-8, 12, `.git` and pitfall 5."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.probe import Capabilities
from codeloop.workspace.copy import CopyWorkspace

from .conftest import Box

pytestmark = pytest.mark.security


def test_case3_symlink_escape_reads_and_writes_nothing_outside(box: Box) -> None:
    secret = box.secrets / ".env"
    result = box.run(
        f"ln -s {secret} leak; cat leak; ln -s / rootlink; cat rootlink{secret};"
        f" ln -s {box.secrets} dir; echo pwned > dir/.env; ls -la dir/"
    )
    assert box.token not in result.output
    assert "pwned" not in secret.read_text()


def test_case4_hard_link_to_outside_file_is_refused(box: Box) -> None:
    result = box.run(
        f"ln {box.secrets / '.env'} hl && echo LINKED-SECRET; ln /etc/passwd pw && echo LINKED-ETC;"
        " echo pwned >> pw; true"
    )
    assert "LINKED-SECRET" not in result.output
    assert "LINKED-ETC" not in result.output
    assert "pwned" not in Path("/etc/passwd").read_text()


def test_case4_write_to_a_hard_linked_workspace_file_spares_the_original(
    tmp_path: Path, caps: Capabilities
) -> None:
    # The overlay workspace's contract: its files may be hard links to the user's files.
    user_file = tmp_path / "user" / "data.txt"
    user_file.parent.mkdir()
    user_file.write_text("original\n")
    view = tmp_path / "state" / "merged"
    view.mkdir(parents=True)
    os.link(user_file, view / "data.txt")

    class LinkedWorkspace:
        kind = "overlay"
        path = view

        def __init__(self) -> None:
            self.absorbed: list[str] = []

        def absorb(self, upper: Path) -> None:
            self.absorbed += sorted(p.name for p in upper.iterdir())

    ws = LinkedWorkspace()
    result = BwrapSandbox(ws, capabilities=caps).run(
        "echo pwned >> data.txt; cat data.txt", cwd=view
    )
    assert result.exit_code == 0, result.output
    assert "pwned" in result.output
    assert user_file.read_text() == "original\n"
    assert ws.absorbed == ["data.txt"]


def test_case5_proc_root_and_cwd_links_show_only_the_sandbox(box: Box) -> None:
    secret = box.secrets / ".env"
    result = box.run(
        f"cat /proc/self/root{secret} /proc/1/root{secret};"
        f" for p in /proc/[0-9]*; do cat $p/cwd{secret} $p/root{secret}; done"
    )
    assert box.token not in result.output
    listing = box.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; ls /proc/1/root/")
    host_cmdline = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert host_cmdline.strip() not in listing.output  # the test process is not visible
    assert "home" not in listing.output.split() and "root" not in listing.output.split()


def test_case6_planted_secrets_and_home_are_invisible(box: Box) -> None:
    home = os.path.expanduser("~")
    result = box.run(
        f"cat {box.secrets}/.env {box.secrets}/.ssh/id_ed25519 {box.secrets}/.aws/credentials;"
        f" ls -la {home} ~/.ssh ~/.aws; echo HOME=$HOME;"
        f" grep -rl {box.token} /tmp /etc /home /root /run /var /mnt /opt /srv . 2>/dev/null; true",
        timeout_s=60,
    )
    assert box.token not in result.output
    assert "HOME=/tmp" in result.output
    # A home that is an ancestor of the workspace shows up only as empty mount-point dirs.
    if Path(home) not in box.workspace.path.parents and home != "/tmp":
        assert f"cannot access '{home}': No such file" in result.output


def test_case7_writes_outside_the_workspace_fail(box: Box) -> None:
    outside = box.repo.parent / "outside.txt"
    result = box.run(
        f"echo x > {outside}; echo x > /usr/evil; echo x > /etc/evil; echo x > /evil;"
        f" mkdir -p {box.repo}/planted; echo x > {box.repo}/hello.txt; ls /usr/evil /etc/evil /evil"
    )
    assert not outside.exists()
    assert not Path("/usr/evil").exists() and not Path("/etc/evil").exists()
    assert not Path("/evil").exists()
    assert "No such file" in result.output


def test_case8_shell_rc_and_path_back_doors_do_not_persist(box: Box) -> None:
    first = box.run(
        "echo 'echo BACKDOOR' >> ~/.bashrc; echo 'echo BACKDOOR' >> ~/.profile;"
        " mkdir -p /tmp/bin; printf '#!/bin/sh\\necho BACKDOOR\\n' > /tmp/bin/ls;"
        " chmod +x /tmp/bin/ls; echo done"
    )
    assert "done" in first.output
    second = box.run("ls ~/.bashrc ~/.profile /tmp/bin 2>&1; bash -ic 'true' 2>/dev/null; ls")
    assert "BACKDOOR" not in second.output
    assert "No such file" in second.output


def test_case12_malicious_install_script_is_contained(box: Box, system_python: str) -> None:
    outside = box.repo.parent / "installed-evil"
    setup = (
        "import os, socket\n"
        "for action in (\n"
        f"    lambda: print(open('{box.secrets}/.env').read()),\n"
        f"    lambda: open('{outside}', 'w').write('pwned'),\n"
        "    lambda: socket.create_connection(('127.0.0.1', 22), timeout=2),\n"
        "    lambda: open(os.path.expanduser('~/.bashrc'), 'a').write('evil'),\n"
        "):\n"
        "    try:\n"
        "        action()\n"
        "    except Exception as exc:\n"
        "        print('blocked:', type(exc).__name__)\n"
        "print('SETUP-RAN', os.environ.get('CODELOOP_TEST_SECRET'))\n"
    )
    box.workspace.write("setup.py", setup.encode())
    result = box.run(f"{system_python} setup.py install")
    assert "SETUP-RAN None" in result.output
    # Reading the secret and connecting out fail; the writes land in throw-away tmpfs.
    assert "blocked: FileNotFoundError" in result.output
    assert "blocked: ConnectionRefusedError" in result.output
    assert box.token not in result.output
    assert not outside.exists()


def test_git_dir_is_read_only(box: Box) -> None:
    result = box.run(
        "echo '#!/bin/sh' > .git/hooks/pre-commit; echo '[core] fsmonitor=evil' >> .git/config;"
        " mkdir .git/evil; echo rc=$?"
    )
    assert "Read-only file system" in result.output
    assert not (box.workspace.path / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (box.workspace.path / ".git" / "config").read_text()


def test_pitfall5_workspace_under_tmp_stays_visible(caps: Capabilities) -> None:
    base = Path(tempfile.mkdtemp(prefix="codeloop-pitfall5-", dir="/tmp"))
    try:
        repo = base / "repo"
        repo.mkdir()
        (repo / "marker.txt").write_text("visible\n")
        ws = CopyWorkspace(repo, base / "state")
        assert str(ws.path).startswith("/tmp/")
        result = BwrapSandbox(ws, capabilities=caps).run("cat marker.txt; df /tmp", cwd=ws.path)
        assert result.exit_code == 0, result.output
        assert "visible" in result.output
        assert "tmpfs" in result.output
    finally:
        shutil.rmtree(base)
