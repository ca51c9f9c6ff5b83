"""SECURITY.md (43): host git never obeys the repository's config, and `apply` never writes a
git repository into the user's tree.

Each program-running payload touches a marker file outside the repository; a test first
shows the trap is real with plain git where it can, then asserts the marker never appears
when codeloop does the same work. The last tests enumerate every host git call site in src/.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.events import SessionStarted
from codeloop.index.history import recent_commits
from codeloop.session.setup import open_store, start_session
from codeloop.workspace.errors import ProtectedPath
from codeloop.workspace.factory import open_workspace
from codeloop.workspace.overlay import OverlayWorkspace
from codeloop.workspace.safe_git import GitError, git
from tests.security.git_call_sites import host_git_call_sites, parse
from tests.workspace.wstools import (
    IDENTITY,
    open_overlay,
    overlay_scratch_dir,
    run_in_overlay,
    tree_hash,
)

pytestmark = pytest.mark.security

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "codeloop"


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


def program(markers: Path, name: str) -> str:
    """An executable that leaves `markers/name` behind (for keys that name a program path)."""
    path = markers.parent / f"{name}.sh"
    path.write_text(f"#!/bin/sh\ntouch {markers / name}\ncat >/dev/null\n")
    path.chmod(0o755)
    return str(path)


def touched(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def plain_git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)


def config(repo: Path, key: str, value: str, file: Path | None = None) -> None:
    where = ["--file", str(file)] if file else []
    subprocess.run(["git", "config", *where, key, value], cwd=repo, check=True)


def code_repo(path: Path, signature: str | None = None) -> Path:
    """A repository with code and history; HEAD signed with `signature` (a gpgsig header)."""
    (path / "pkg").mkdir(parents=True)
    (path / "pkg" / "stats.py").write_text("def mean(values):\n    return sum(values)\n")
    git(["init", "-q"], path)
    git(["add", "-A"], path)
    git([*IDENTITY, "commit", "-qm", "add mean to stats"], path)
    if signature:
        tree = git(["rev-parse", "HEAD^{tree}"], path).stdout.decode().strip()
        parent = git(["rev-parse", "HEAD"], path).stdout.decode().strip()
        body = (f"tree {tree}\nparent {parent}\nauthor A <a@a> 1700000000 +0000\n"
                f"committer A <a@a> 1700000000 +0000\ngpgsig {signature}\n\n"
                "fix mean in stats\n")
        sha = git(["hash-object", "-t", "commit", "-w", "--stdin"], path,
                  input=body.encode()).stdout.decode().strip()
        git(["update-ref", "HEAD", sha], path)
    return path


SIGNATURES = {
    "openpgp": ("gpg.program",
                "-----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAd\n -----END PGP SIGNATURE-----"),
    "x509": ("gpg.x509.program",
             "-----BEGIN SIGNED MESSAGE-----\n \n MIIBsw\n -----END SIGNED MESSAGE-----"),
}


def start(tmp_path: Path, repo: Path) -> SessionStarted:
    """`codeloop run` / `POST /sessions` up to the recorded start (repo map, history ranker)."""
    store = open_store(tmp_path / "data")
    sid = start_session(store, "fix mean in stats", repo, Settings(), "scripted")
    started = store.read(sid)[0].event
    assert isinstance(started, SessionStarted)
    return started


# -- the history ranker and session start ------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SIGNATURES))
def test_session_start_runs_no_signature_program(tmp_path: Path, markers: Path,
                                                 kind: str) -> None:
    key, signature = SIGNATURES[kind]
    repo = code_repo(tmp_path / "repo", signature)
    config(repo, "log.showSignature", "true")
    config(repo, key, program(markers, "signature-program"))
    plain_git(repo, "log", "-1")
    assert touched(markers) == ["signature-program"], "the trap must be real"
    (markers / "signature-program").unlink()

    started = start(tmp_path, repo)
    commits = recent_commits(repo)
    assert [c.message for c in commits][:1] == ["fix mean in stats"]  # history was read
    assert started.base_commit == git(["rev-parse", "HEAD"], repo).stdout.decode().strip()
    assert touched(markers) == []


@pytest.mark.parametrize("how", ["include.path", "includeIf.gitdir"])
def test_included_config_runs_no_program(tmp_path: Path, markers: Path, how: str) -> None:
    key, signature = SIGNATURES["openpgp"]
    repo = code_repo(tmp_path / "repo", signature)
    extra = repo / "tools" / "git.cfg"  # shipped by the repository itself
    extra.parent.mkdir()
    config(repo, "log.showSignature", "true", extra)
    config(repo, key, program(markers, "included-program"), extra)
    section = "include.path" if how == "include.path" else f"includeIf.gitdir:{repo}/.path"
    config(repo, section, str(extra))
    plain_git(repo, "log", "-1")
    assert touched(markers) == ["included-program"], "the trap must be real"
    (markers / "included-program").unlink()

    start(tmp_path, repo)
    assert recent_commits(repo)
    # verify-commit always runs the signature program: only the override from the listed
    # (included) key stops it, so this shows `git config --list` sees included keys.
    assert git(["verify-commit", "HEAD"], repo, check=False).returncode != 0
    assert touched(markers) == []


# -- drivers and helpers through safe_git ------------------------------------------------


def test_drivers_whose_names_hold_an_equals_sign_are_neutralised(tmp_path: Path,
                                                                 markers: Path) -> None:
    # `-c filter.a=b.clean=` is read by git as key `filter.a`: overrides go by environment.
    repo = code_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("*.py filter=a=b diff=a=b merge=a=b\n")
    for key, name in [("filter.a=b.clean", "clean"), ("filter.a=b.smudge", "smudge"),
                      ("diff.a=b.textconv", "textconv"), ("diff.a=b.command", "diff-command"),
                      ("merge.a=b.driver", "merge-driver")]:
        config(repo, key, f"touch {markers / name}; cat")
    config(repo, "filter.a=b.process", f"touch {markers / 'process'}")
    config(repo, "filter.a=b.required", "true")
    (repo / "pkg" / "stats.py").write_text("def mean(values):\n    return 0\n")
    plain_git(repo, "diff")
    assert touched(markers), "the trap must be real"
    for marker in markers.iterdir():
        marker.unlink()

    for args in (["status"], ["diff"], ["add", "-A"], ["diff", "--cached"], ["log", "-p", "-2"],
                 ["blame", "pkg/stats.py"], ["show", "HEAD"], ["stash", "-q"],
                 ["checkout", "-q", "HEAD", "--", "pkg/stats.py"]):
        git(args, repo, check=False)
    assert touched(markers) == []


def test_fetch_runs_no_remote_helper_alias_or_upload_pack(tmp_path: Path,
                                                          markers: Path) -> None:
    source = code_repo(tmp_path / "source")
    repo = code_repo(tmp_path / "repo")
    extra = repo / "remotes.cfg"
    config(repo, "remote.helper.url", "evil::whatever", extra)
    config(repo, "remote.helper.fetch", "+refs/heads/*:refs/remotes/helper/*", extra)
    config(repo, "alias.remote-evil", f"!touch {markers / 'alias'}", extra)
    config(repo, "remote.local.url", str(source), extra)
    config(repo, "remote.local.fetch", "+refs/heads/*:refs/remotes/local/*", extra)
    config(repo, "remote.vcs.url", "whatever", extra)
    config(repo, "remote.vcs.vcs", "evil2", extra)
    config(repo, "alias.remote-evil2", f"!touch {markers / 'vcs-alias'}", extra)
    config(repo, f"includeIf.gitdir:{repo}/.path", str(extra))
    plain_git(repo, "fetch", "-q", "helper")
    plain_git(repo, "fetch", "-q", "vcs")
    assert touched(markers) == ["alias", "vcs-alias"], "the trap must be real"
    for marker in markers.iterdir():
        marker.unlink()

    assert git(["fetch", "-q", "helper"], repo, check=False).returncode != 0
    assert git(["fetch", "-q", "vcs"], repo, check=False).returncode != 0
    assert git(["fetch", "-q", "local"], repo, check=False).returncode == 0  # still works
    assert touched(markers) == []


def test_fetch_refuses_an_upload_pack_it_cannot_override(tmp_path: Path, markers: Path) -> None:
    # git keeps the first remote.*.uploadpack it reads: an override after it is ignored.
    source = code_repo(tmp_path / "source")
    repo = code_repo(tmp_path / "repo")
    config(repo, "remote.local.url", str(source))
    config(repo, "remote.local.uploadpack", f"touch {markers / 'uploadpack'}; git-upload-pack")
    plain_git(repo, "fetch", "-q", "local")
    assert touched(markers) == ["uploadpack"], "the trap must be real"
    (markers / "uploadpack").unlink()

    with pytest.raises(GitError, match=r"remote\.local\.uploadpack"):
        git(["fetch", "-q", "local"], repo, check=False)
    assert git(["log", "-1"], repo).returncode == 0  # only commands that would run it stop
    assert touched(markers) == []


# -- apply never writes a repository into the user's tree --------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return code_repo(tmp_path / "repo")


@pytest.fixture
def ws(repo: Path, tmp_path: Path) -> OverlayWorkspace:
    return open_overlay(repo, tmp_path / "state")


def users_git_in(where: Path, markers: Path) -> None:
    """What the user might run there after an apply: status, diff, and log on a terminal."""
    plain_git(where, "status")
    plain_git(where, "diff")
    primary, secondary = pty.openpty()
    try:
        subprocess.run(["git", "log", "-1"], cwd=where, stdin=secondary, stdout=secondary,
                       stderr=secondary, check=False, timeout=30,
                       # PAGER only replaces less as the default: core.pager still wins
                       env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
                       | {"TERM": "dumb", "PAGER": "cat"})
    finally:
        os.close(primary)
        os.close(secondary)


def trap_config(markers: Path) -> str:
    return ("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
            f"\tfsmonitor = touch {markers / 'fsmonitor'}; false\n"
            f"\tpager = touch {markers / 'pager'}; cat\n"
            f"[diff]\n\texternal = touch {markers / 'diff-external'}\n")


# Each leaves files in objects/ and refs/, so that a plain copy of the files recreates them.
PLANTS = {
    "git-init-bare": "git init -q --bare vendor/lib && cp /tmp/trap.cfg vendor/lib/config && "
                     "touch vendor/lib/objects/info/packs vendor/lib/refs/heads/.keep",
    "by-hand": "mkdir -p docs/img.d/objects/info docs/img.d/refs/heads && "
               "touch docs/img.d/objects/info/packs docs/img.d/refs/heads/.keep && "
               "echo 'ref: refs/heads/main' > docs/img.d/HEAD && "
               "cp /tmp/trap.cfg docs/img.d/config",
    "commondir": "mkdir -p x/wt && echo 'ref: refs/heads/main' > x/wt/HEAD && "
                 "echo ../../.git > x/wt/commondir && cp /tmp/trap.cfg x/wt/config",
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_an_embedded_repository_planted_by_a_command_is_refused(
        ws: OverlayWorkspace, repo: Path, tmp_path: Path, markers: Path, plant: str) -> None:
    scratch = overlay_scratch_dir(tmp_path)
    before = tree_hash(repo)
    ws.write("pkg/stats.py", b"def mean(values):\n    return sum(values) / len(values)\n")
    script = f"cat > /tmp/trap.cfg <<'EOF'\n{trap_config(markers)}EOF\n{PLANTS[plant]}"
    ws.absorb(run_in_overlay(ws, script, scratch))
    planted = [p for p in ws.changed_files() if p != "pkg/stats.py"]
    assert planted, "the command must really leave a repository in the workspace"
    top = ws.path / planted[0].rsplit("/", 1)[0].split("/objects")[0].split("/refs")[0]
    if plant == "git-init-bare":  # the trap is real: plain git there runs the config
        users_git_in(top, markers)
        assert "fsmonitor" in touched(markers)
        for marker in markers.iterdir():
            marker.unlink()

    result = ws.apply()
    assert result.applied == []
    assert set(planted) <= set(result.refused)
    assert all("repositor" in result.refused[p] for p in planted)
    assert tree_hash(repo) == before, "nothing partial is written"
    assert not (repo / top.relative_to(ws.path)).exists()
    users_git_in(repo, markers)
    assert touched(markers) == []


def test_embedded_repositories_written_through_file_tools_are_refused(
        ws: OverlayWorkspace, repo: Path, tmp_path: Path, markers: Path) -> None:
    fixture = repo / "tests" / "fixtures" / "remote.git"  # the user's own test fixture
    subprocess.run(["git", "init", "-q", "--bare", str(fixture)], check=True)
    git(["add", "-A"], repo)
    git([*IDENTITY, "commit", "-qm", "fixture"], repo)
    ws.discard()
    before = tree_hash(repo)
    ws.write("assets/cache/HEAD", b"ref: refs/heads/main\n")
    ws.write("assets/cache/refs/heads/main", b"0" * 40 + b"\n")
    ws.write("assets/cache/config", trap_config(markers).encode())
    ws.write("tests/fixtures/remote.git/config", trap_config(markers).encode())
    ws.write("README.md", b"innocent\n")
    result = ws.apply()
    assert result.applied == []
    assert set(result.refused) == {"assets/cache/HEAD", "assets/cache/refs/heads/main",
                                   "assets/cache/config", "tests/fixtures/remote.git/config"}
    assert tree_hash(repo) == before
    assert touched(markers) == []


GIT_NAMES = [".git ", ".git.", ".Git.. ", "git~1", "GIT~1", ".g\u200cit", ".git\ufeff"]


def test_gitfiles_and_git_name_variants_are_refused(ws: OverlayWorkspace, repo: Path,
                                                    tmp_path: Path) -> None:
    scratch = overlay_scratch_dir(tmp_path)
    before = tree_hash(repo)
    with pytest.raises(ProtectedPath):
        ws.write("sub/.git", b"gitdir: ../../elsewhere\n")
    lines = ["mkdir -p sub/.GIT && echo 'gitdir: /tmp' > sub/.git"]
    for n, name in enumerate(GIT_NAMES):
        lines.append(f"mkdir -p 'v{n}' && printf 'gitdir: ../evil\\n' > 'v{n}/{name}'")
    lines.append("mkdir -p 'w/.git /objects' 'w/.git /refs' && echo x > 'w/.git /HEAD'")
    ws.absorb(run_in_overlay(ws, "\n".join(lines), scratch))
    assert sorted(ws.last_dropped) == ["sub/.GIT", "sub/.git"]
    result = ws.apply()
    expected = {f"v{n}/{name}" for n, name in enumerate(GIT_NAMES)} | {"w/.git /HEAD"}
    assert set(result.refused) == expected
    assert all("for .git" in result.refused[p] for p in expected)
    assert result.applied == [] and tree_hash(repo) == before


def test_codeloop_apply_prints_the_refusal(tmp_path: Path, repo: Path, markers: Path) -> None:
    data = tmp_path / "data"
    store = open_store(data)
    sid = start_session(store, "tidy", repo, Settings(), "scripted")
    ws = open_workspace(repo, data / "sessions" / sid / "workspace")
    ws.write("vendor/lib/HEAD", b"ref: refs/heads/main\n")
    ws.write("vendor/lib/objects/info/packs", b"\n")
    ws.write("vendor/lib/config", trap_config(markers).encode())
    before = tree_hash(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODELOOP_", "GIT_"))}
    env.update(CODELOOP_DATA_DIR=str(data), PYTHONPATH=str(ROOT / "src"), COLUMNS="250",
               HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    out = subprocess.run([sys.executable, "-m", "codeloop", "apply", sid], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "vendor/lib/config" in text and "embedded repositories are never applied" in text
    assert "nothing was applied" in text
    assert tree_hash(repo) == before


# -- every host git call goes through safe_git -------------------------------------------

# Files allowed to start git on the host, and why.
ALLOWED = {
    "workspace/safe_git.py": "the one place host git runs, with the repository's programs off",
}


def test_the_call_site_scanner_finds_every_spelling() -> None:
    sample = parse({"a.py": (
        "import os, shutil, subprocess\n"
        "subprocess.run(['git', 'log'])\n"                      # 2
        "GIT = ('git', '-c', 'x=y')\n"                          # 3
        "subprocess.Popen([*GIT, 'status'])\n"                  # 4
        "exe = shutil.which('git')\n"
        "cmd = [exe, 'diff']\n"                                 # 6
        "subprocess.check_output(cmd)\n"                        # 7
        "os.execvp('git', ['git', 'fetch'])\n"                  # 8
        "subprocess.run('git status', shell=True)\n"            # 9
        "subprocess.run(['/usr/bin/git', 'gc'])\n"              # 10
        "subprocess.run(['ls', 'git'])\n"
        "TOOLS = {'git': ('--exec-path',)}\n"
    ), "b/c.py": (
        "import subprocess\n"
        "from codeloop.a import GIT as G\n"
        "def run(args):\n"
        "    return subprocess.run([*G, *args])\n"                # b/c.py:4
    )})
    expected = sorted([*(f"a.py:{n}" for n in (2, 3, 4, 6, 7, 8, 9, 10)), "b/c.py:4"])
    assert host_git_call_sites(sample) == expected


def test_every_host_git_call_goes_through_safe_git() -> None:
    trees = parse({str(p.relative_to(SRC)): p.read_text() for p in SRC.rglob("*.py")})
    sites = host_git_call_sites(trees)
    outside = [s for s in sites if s.split(":")[0] not in ALLOWED]
    assert outside == [], ("host git outside safe_git (route it through "
                           f"codeloop.workspace.safe_git.git): {outside}")
    assert any(s.startswith("workspace/safe_git.py:") for s in sites), "the scanner is blind"
