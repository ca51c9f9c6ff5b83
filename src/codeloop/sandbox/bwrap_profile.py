"""The bwrap argument list: namespaces, the read-only system view, tmpfs and the workspace.

Order matters (pitfall 5): the sized tmpfs mounts come before the workspace so a workspace
that lives under /tmp stays visible.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.sandbox.etc_view import etc_entries
from codeloop.sandbox.user_tasks import counts_per_namespace
from codeloop.workspace.hostfs import SafeRoot

# Top-level system directories: on merged-/usr systems they are symlinks into /usr.
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SETPRIV = "/usr/bin/setpriv"
SYSTEM_PYTHON = "/usr/bin/python3"
PRLIMIT = "/usr/bin/prlimit"

EGRESS_PORT = 3128
_EGRESS_DIR = "/run/codeloop"
_FORWARDER = Path(__file__).with_name("egress_forwarder.py")


@dataclass(frozen=True)
class WorkspaceMount:
    """How the workspace appears inside: an overlay over `source`, or a plain bind."""

    source: Path
    dest: Path
    upper: Path | None = None
    work: Path | None = None
    bind_writable: bool = False


@dataclass(frozen=True)
class Profile:
    mount: WorkspaceMount
    cwd: Path
    env: dict[str, str]
    seccomp_fd: int
    tmp_size_mb: int
    shm_size_mb: int
    drop_to: tuple[int, int] | None = None
    extra_ro_binds: Sequence[Path] = field(default_factory=tuple)
    # Writable host directories (e.g. a virtualenv an install step must write into).
    extra_rw_binds: Sequence[Path] = field(default_factory=tuple)
    # Host directories writable through an overlay: (directory, upper, work); the writes
    # land in `upper`, never in the directory.
    extra_overlays: Sequence[tuple[Path, Path, Path]] = field(default_factory=tuple)
    info_fd: int | None = None
    egress_socket: Path | None = None
    # Bound read-only at $HOME/.gitconfig (HOME is /tmp inside).
    git_config: Path | None = None
    # The host directory whose allow-listed entries appear at /etc.
    etc_root: Path = Path("/etc")
    # Generated /etc files: (fd holding the content, name under /etc), e.g. passwd.
    etc_files: Sequence[tuple[int, str]] = field(default_factory=tuple)
    # bwrap holds the command back until a byte arrives here (its cgroup is joined first).
    block_fd: int | None = None
    # With `block_fd`: the command runs only once "go" arrives here. bwrap takes the end of
    # the pipe for a go-ahead too, so a codeloop killed before letting it go would otherwise
    # leave the command running with no one watching its time (and outside its cgroup).
    go_fd: int | None = None
    # Symlinks made in the sandbox's own tree: (path, target).
    links: Sequence[tuple[Path, Path]] = field(default_factory=tuple)
    # RLIMIT_NPROC set inside the sandbox's user namespace, where the kernel counts only
    # that namespace's tasks (user_tasks.py): an exact per-command process limit.
    namespace_nproc: int | None = None


def _system_view(profile: Profile) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in _SYSTEM_DIRS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    # Traversable, so a missing file reads as absent rather than forbidden (git fails on an
    # unreadable /etc/gitconfig).
    args += ["--perms", "0755", "--dir", "/etc"]
    names = etc_entries(profile.etc_root)
    # Parents of nested entries (ssl/certs) too: bwrap would make them 0700.
    for parent in sorted({str(Path(n).parent) for n in names} - {"."}):
        args += ["--perms", "0755", "--dir", f"/etc/{parent}"]
    for name in names:
        args += ["--ro-bind-try", str(profile.etc_root / name), f"/etc/{name}"]
    for fd, name in profile.etc_files:
        args += ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
    return args


def _namespaces(drop: bool) -> list[str]:
    if drop:
        # Started as root: a user namespace would map the command back to host uid 0, so
        # bwrap stays privileged and the command drops to a dedicated uid with setpriv.
        return [
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
    return ["--unshare-all", "--unshare-user", "--disable-userns"]


_PREMOUNTED = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc",
               "/dev")


def _mount_point_parents(paths: Sequence[Path]) -> list[str]:
    """Traversable (0755) parents for bind targets, created before bwrap makes them 0700.

    The command holds no capability, so a 0700 root-owned parent would hide the workspace
    (or a tool) from it. Parents inside the sized /tmp are as writable as /tmp itself
    (sticky 1777), as they are when bwrap runs as the user: writes there stay in the tmpfs.
    """
    made: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents):
            text = str(parent)
            if text in ("/", "/tmp") or text in made or any(
                    text == top or text.startswith(top + "/") for top in _PREMOUNTED):
                continue
            made.append(text)
    args: list[str] = []
    for text in made:
        args += ["--perms", "1777" if text.startswith("/tmp/") else "0755", "--dir", text]
    return args


def _links(profile: Profile) -> list[str]:
    """Symlinks on the sandbox's root tmpfs (after /tmp's, so one there stays visible); a path
    in the system view or one a mount already uses (or lies in) is left alone."""
    taken = [Path(p) for p in (*profile.extra_ro_binds, *profile.extra_rw_binds,
                               *(o[0] for o in profile.extra_overlays), profile.mount.dest)]
    args: list[str] = []
    for path, target in profile.links:
        premounted = any(str(path) == top or str(path).startswith(top + "/") for top in _PREMOUNTED)
        clash = any(path == t or path in t.parents or t in path.parents for t in taken)
        if path.is_absolute() and str(path) not in ("/", "/tmp") and not premounted and not clash:
            args += ["--symlink", str(target), str(path)]
    return args


def _workspace(mount: WorkspaceMount) -> list[str]:
    src, dest = str(mount.source), str(mount.dest)
    if mount.upper is not None and mount.work is not None:
        args = ["--overlay-src", src, "--overlay", str(mount.upper), str(mount.work), dest]
    elif mount.bind_writable:
        args = ["--bind", src, dest]
    else:
        args = ["--ro-bind", src, dest]
    view = SafeRoot(mount.source)  # `.git` as it is, never a link's target
    if view.exists(".git") and not view.is_symlink(".git"):
        args += ["--ro-bind", str(mount.source / ".git"), str(mount.dest / ".git")]
    return args


def namespace_nproc_works() -> bool:
    """Whether a process limit set inside a command's own user namespace binds only that
    command (Linux 5.14+, util-linux's prlimit present); not for root, which has none."""
    return counts_per_namespace() and os.access(PRLIMIT, os.X_OK)


# Reads the go-ahead through /proc (dash redirects only fds 0-9), then runs the rest.
_GO_GATE = 'IFS= read -r go < /proc/self/fd/{fd} && [ "$go" = go ] || exit 125; exec "$@"'

# bwrap keeps, as root, only what setpriv needs to change uid and empty the bounding set.
_SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


def _drop_prefix(uid: int, gid: int) -> list[str]:
    # No capability survives: effective and permitted go with the uid change, inheritable,
    # ambient and the bounding set are emptied, and no_new_privs stops setuid/file caps
    # from bringing any back. (CAP_DAC_OVERRIDE, once kept to edit root-owned workspace
    # files, also read every root-only file in view; idmapped binds do that job now.)
    return [
        SETPRIV,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def bwrap_argv(bwrap: str, profile: Profile, command: str) -> list[str]:
    """The full argv that runs `sh -c command` under `profile`."""
    drop = profile.drop_to is not None
    args = [bwrap, *_namespaces(drop), "--new-session", "--die-with-parent"]
    args += ["--hostname", "codeloop"]
    args += _system_view(profile)
    if profile.egress_socket is not None:
        args += ["--perms", "0755", "--dir", "/run", "--perms", "0755", "--dir", _EGRESS_DIR]
        args += ["--ro-bind", str(_FORWARDER), f"{_EGRESS_DIR}/forwarder.py"]
        args += ["--bind", str(profile.egress_socket), f"{_EGRESS_DIR}/egress.sock"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", str(profile.shm_size_mb << 20), "--tmpfs", "/dev/shm"]
    args += ["--perms", "1777", "--size", str(profile.tmp_size_mb << 20), "--tmpfs", "/tmp"]
    args += ["--remount-ro", "/dev"]
    args += _mount_point_parents([*profile.extra_ro_binds, *profile.extra_rw_binds,
                                  *(o[0] for o in profile.extra_overlays), profile.mount.dest,
                                  *(path for path, _ in profile.links)])
    # After the tmpfs mounts, like the workspace, so binds that live under /tmp stay visible.
    for extra in profile.extra_ro_binds:
        args += ["--ro-bind", str(extra), str(extra)]
    for extra in profile.extra_rw_binds:
        args += ["--bind", str(extra), str(extra)]
    for lower, upper, work in profile.extra_overlays:
        args += ["--overlay-src", str(lower), "--overlay", str(upper), str(work), str(lower)]
    args += _workspace(profile.mount)
    args += _links(profile)
    if profile.git_config is not None:
        args += ["--ro-bind", str(profile.git_config), "/tmp/.gitconfig"]
    # Whatever bwrap created on its own root tmpfs (mount points) is frozen: the root is
    # RAM that no size limit covers.
    args += ["--remount-ro", "/"]
    args += ["--chdir", str(profile.cwd), "--clearenv"]
    env = dict(profile.env)
    if profile.egress_socket is not None:
        proxy = f"http://127.0.0.1:{EGRESS_PORT}"
        # Both spellings (curl reads only the lower-case http_proxy), and npm's own.
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
                     "npm_config_proxy", "npm_config_https_proxy"):
            env[name] = proxy
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    args += ["--seccomp", str(profile.seccomp_fd)]
    if profile.info_fd is not None:
        args += ["--info-fd", str(profile.info_fd)]
    if profile.block_fd is not None:
        args += ["--block-fd", str(profile.block_fd)]
    # bwrap as root keeps every capability unless told otherwise, and takes one per flag.
    args += ["--cap-drop", "ALL"]
    if profile.drop_to is not None:
        for cap in _SETPRIV_CAPS:
            args += ["--cap-add", cap]
    args += ["--"]
    if profile.go_fd is not None:
        args += ["/bin/sh", "-c", _GO_GATE.format(fd=profile.go_fd), "codeloop-gate"]
    if profile.drop_to is not None:
        args += _drop_prefix(*profile.drop_to)
    if profile.namespace_nproc is not None:
        limit = profile.namespace_nproc
        args += [PRLIMIT, f"--nproc={limit}:{limit}", "--"]
    if profile.egress_socket is not None:
        # The forwarder listens on the sandbox's loopback first, then runs the command.
        forward = f"{_EGRESS_DIR}/forwarder.py"
        sock = f"{_EGRESS_DIR}/egress.sock"
        return [*args, SYSTEM_PYTHON, forward, sock, str(EGRESS_PORT), command]
    return [*args, "/bin/sh", "-c", command]
