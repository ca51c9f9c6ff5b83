"""Every place where host code opens, stats, lists, reads, writes, changes, removes or
executes a path, checked against an explicit list (SECURITY.md class 42).

The host touches a workspace or a repository only through `SafeRoot`
(codeloop.workspace.hostfs), which never follows a link. Any other call that touches a path
must be listed here with its category and why it is safe:

- `safe-api`: the safe file API itself (hostfs, fsops, safe_git), or the workspace's own
  fd-level code: each call is relative to a directory fd reached with no link and does not
  follow the final name (`dir_fd=` with O_NOFOLLOW / follow_symlinks=False).
- `ours`: paths codeloop owns: the data dir, cache dir, a session's state dir, temp dirs and
  overlay layers it makes (a layer is read only after its command has exited).
- `user`: paths the user names (`--repo`, `--out FILE`, their config file, a model file),
  the root itself only, never a path below a repository.
- `eval`: the benchmark harness' own environments and task checkouts.
- `host`: the host system (/proc, /sys, /usr, the programs codeloop launches).
- `git`: host git in the user's repository; class (43) runs it through `safe_git`.

Sites are keyed by (module, enclosing function, call), not line numbers; see host_inventory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.host_inventory import Site, scan_tree

pytestmark = pytest.mark.security

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "codeloop"
CATEGORIES = ("safe-api", "ours", "user", "eval", "host", "git")

_FD = "safe-api: relative to a directory fd reached with no link; the name is not followed"
_QUIESCENT = ("ours: a command's overlay upper layer after the command exited (its pid "
              "namespace is gone); entries lstat'ed first, directories not followed")

_USER_ENV = "user: the user's environment ($VIRTUAL_ENV, $PATH), outside the repository"
_PREFIX = ("host: a Python installation's interpreter and stdlib, outside the repository "
           "(links resolved: the host's, not the repository's)")

ALLOWED: dict[str, str] = {
    # --- the safe API ---------------------------------------------------------------------
    "codeloop.workspace.hostfs:SafeRoot._root_fd:os.open": "safe-api: opens the trusted root",
    "codeloop.workspace.hostfs:SafeRoot._open:os.open": "safe-api: O_NOFOLLOW below a parent fd",
    "codeloop.workspace.hostfs:SafeRoot.open_dir:os.open": "safe-api: opens the trusted root",
    "codeloop.workspace.hostfs:SafeRoot.lstat:os.stat": "safe-api: root, or no-follow at an fd",
    "codeloop.workspace.hostfs:SafeRoot.scandir:os.listdir": _FD,
    "codeloop.workspace.hostfs:SafeRoot.scandir:os.stat": _FD,
    "codeloop.workspace.hostfs:SafeRoot._walk_fd:os.listdir": _FD,
    "codeloop.workspace.hostfs:SafeRoot._walk_fd:os.stat": _FD,
    "codeloop.workspace.hostfs:SafeRoot._walk_fd:os.open": _FD,
    "codeloop.workspace.hostfs:SafeRoot.write_bytes:os.stat": _FD,
    "codeloop.workspace.fsops:open_dir:os.open": _FD,
    "codeloop.workspace.fsops:open_dir:os.mkdir": _FD,
    "codeloop.workspace.fsops:lstat_at:os.stat": _FD,
    "codeloop.workspace.fsops:read_at:os.open": _FD,
    "codeloop.workspace.fsops:readlink_at:os.readlink": _FD,
    "codeloop.workspace.fsops:write_file_at:os.open": _FD,
    "codeloop.workspace.fsops:symlink_at:os.symlink": _FD,
    "codeloop.workspace.fsops:replace_at:os.rename": _FD,
    "codeloop.workspace.fsops:remove_at:shutil.rmtree": "safe-api: rmtree with dir_fd, no link followed",
    "codeloop.workspace.fsops:remove_at:os.unlink": _FD,
    "codeloop.workspace.fsops:files_below:os.open": _FD,
    "codeloop.workspace.fsops:files_below:os.listdir": _FD,
    "codeloop.workspace.fsops:_lstat_quiet:os.stat": _FD,
    "codeloop.workspace.fsops:_unlink_quiet:os.unlink": _FD,
    "codeloop.workspace.safe_git:_run:subprocess.run": "safe-api: safe_git, the one way to run git",
    # --- the workspace's fd-level code --------------------------------------------------------
    "codeloop.workspace.absorb:_absorb_dir:os.listdir": _FD,
    "codeloop.workspace.absorb:_absorb_dir:os.readlink": _FD,
    "codeloop.workspace.absorb:_absorb_dir:os.stat": _FD,
    "codeloop.workspace.absorb:_absorb_subdir:os.mkdir": _FD,
    "codeloop.workspace.absorb:_absorb_subdir:os.open": _FD,
    "codeloop.workspace.absorb:_absorb_subdir:os.chmod": _QUIESCENT,
    "codeloop.workspace.absorb:_absorb_file:os.chmod": _QUIESCENT,
    "codeloop.workspace.absorb:_xattr:os.getxattr": "safe-api: /proc/self/fd of an fd, follow_symlinks=False",
    "codeloop.workspace.apply:_drop:os.unlink": _FD,
    "codeloop.workspace.apply:_holds_entries:os.listdir": _FD,
    "codeloop.workspace.apply:_prune_dirs:os.rmdir": _FD,
    "codeloop.workspace.apply:_roll_back:os.rmdir": _FD,
    "codeloop.workspace.apply:undo_changes:os.rmdir": _FD,
    "codeloop.workspace.changes:side_at:os.readlink": _FD,
    "codeloop.workspace.changes:side_at:os.stat": _FD,
    "codeloop.workspace.changes:_scan_dir:os.scandir": "safe-api: scandir of a SafeRoot.open_dir fd",
    "codeloop.workspace.changes:_scan_dir:os.stat": _FD,
    "codeloop.workspace.changes:_scan_changed_dir:*.is_dir": "safe-api: DirEntry, follow_symlinks=False",
    "codeloop.workspace.changes:_scan_changed_dir:*.is_file": "safe-api: DirEntry, follow_symlinks=False",
    "codeloop.workspace.changes:_scan_changed_dir:*.is_symlink": "safe-api: DirEntry d_type",
    "codeloop.workspace.farm:build_farm:os.scandir": "safe-api: scandir of a SafeRoot.open_dir fd",
    "codeloop.workspace.farm:build_farm:*.stat": "safe-api: fd DirEntry no-follow; ours: the new view",
    "codeloop.workspace.farm:build_farm:os.mkdir": _FD,
    "codeloop.workspace.farm:build_farm:os.readlink": _FD,
    "codeloop.workspace.farm:build_farm:os.symlink": _FD,
    "codeloop.workspace.farm:build_farm:*.mkdir": "ours: the new merged view in the state dir",
    "codeloop.workspace.farm:_lstat:os.stat": _FD,
    "codeloop.workspace.farm:_mirror_file:os.link": _FD,
    "codeloop.workspace.farm:_copy_file:os.open": _FD,
    "codeloop.workspace.farm:_copy_file:os.utime": "safe-api: on an fd just opened O_NOFOLLOW",
    "codeloop.workspace.links:read_link:os.readlink": _FD,
    "codeloop.workspace.overlay:OverlayWorkspace.list:os.listdir": _FD,
    "codeloop.workspace.overlay:OverlayWorkspace.write:os.stat": _FD,
    "codeloop.workspace.overlay:OverlayWorkspace.absorb:os.open": "ours: a layer dir we made (O_NOFOLLOW)",
    "codeloop.workspace.overlay:OverlayWorkspace._merged_fd:os.open": "ours: the merged view's top (O_NOFOLLOW)",
    "codeloop.workspace.overlay:OverlayWorkspace._root_fd:os.open": "user: the repository's root itself",
    # --- the workspace's own state ---------------------------------------------------------------
    "codeloop.workspace.overlay:OverlayWorkspace.__init__:*.is_dir": "user: the repository root; ours: state",
    "codeloop.workspace.overlay:OverlayWorkspace.__init__:*.is_file": "ours: the state dir's manifest",
    "codeloop.workspace.overlay:OverlayWorkspace.__init__:*.mkdir": "ours: the session's state dir",
    "codeloop.workspace.overlay:OverlayWorkspace._build:*.exists": "ours: merged view in the state dir",
    "codeloop.workspace.overlay:OverlayWorkspace._build:*.rename": "ours: merged view in the state dir",
    "codeloop.workspace.overlay:OverlayWorkspace._build:shutil.rmtree": "ours: old merged view (rmtree does not follow links)",
    "codeloop.workspace.overlay:OverlayWorkspace._locked:*.open": "ours: the state dir's lock file",
    "codeloop.workspace.overlay:OverlayWorkspace._manifest_stamp:*.stat": "ours: the manifest",
    "codeloop.workspace.overlay:OverlayWorkspace._raw:*.is_file": "ours: the state dir's journal",
    "codeloop.workspace.overlay:OverlayWorkspace._raw:*.read_text": "ours: the state dir's journal",
    "codeloop.workspace.overlay:OverlayWorkspace._save:*.write_text": "ours: the state dir's journal",
    "codeloop.workspace.overlay:OverlayWorkspace._touch:*.open": "ours: the state dir's journal",
    "codeloop.workspace.overlay:OverlayWorkspace.apply:*.iterdir": "ours: the checkpoints dir",
    "codeloop.workspace.overlay:OverlayWorkspace.apply:*.mkdir": "ours: a checkpoint dir",
    "codeloop.workspace.overlay:OverlayWorkspace.apply:*.write_text": "ours: a checkpoint's record",
    "codeloop.workspace.overlay:OverlayWorkspace.undo:*.is_file": "ours: a checkpoint's record",
    "codeloop.workspace.overlay:OverlayWorkspace.undo:*.read_text": "ours: a checkpoint's record",
    "codeloop.workspace.overlay:OverlayWorkspace.layer:*.mkdir": "ours: a layer dir in the state dir",
    "codeloop.workspace.overlay:OverlayWorkspace.layer:tempfile.mkdtemp": "ours: a layer dir",
    "codeloop.workspace.overlay:_remove_tree:os.walk": _QUIESCENT,
    "codeloop.workspace.overlay:_remove_tree:os.path.islink": _QUIESCENT,
    "codeloop.workspace.overlay:_remove_tree:os.chmod": _QUIESCENT,
    "codeloop.workspace.overlay:_remove_tree:shutil.rmtree": _QUIESCENT,
    "codeloop.workspace.apply:apply_changes:*.mkdir": "ours: a checkpoint dir",
    "codeloop.workspace.apply:apply_changes:*.write_text": "ours: a checkpoint's record",
    "codeloop.workspace.apply:apply_changes:os.open": "ours: a checkpoint's files dir",
    "codeloop.workspace.apply:latest_checkpoint:*.glob": "ours: the checkpoints dir",
    "codeloop.workspace.apply:latest_checkpoint:*.is_file": "ours: a checkpoint's record",
    "codeloop.workspace.apply:latest_checkpoint:*.read_text": "ours: a checkpoint's record",
    "codeloop.workspace.apply:undo_changes:*.read_text": "ours: a checkpoint's record",
    "codeloop.workspace.apply:undo_changes:*.write_text": "ours: a checkpoint's record",
    "codeloop.workspace.apply:undo_changes:os.open": "ours: a checkpoint's files dir",
    "codeloop.workspace.farm:seal:*.write_bytes": "ours: the seal marker in the state dir",
    "codeloop.workspace.farm:seal:os.lstat": "ours: the merged view's dirs, just built",
    "codeloop.workspace.manifest:Manifest.load:*.read_text": "ours: the manifest",
    "codeloop.workspace.manifest:Manifest.save:*.write_text": "ours: the manifest",
    "codeloop.workspace.manifest:Manifest.save:os.replace": "ours: the manifest",
    "codeloop.workspace.copy:CopyWorkspace.__init__:*.exists": "ours: the copy in the state dir",
    "codeloop.workspace.copy:CopyWorkspace.__init__:*.mkdir": "ours: the state dir",
    "codeloop.workspace.copy:CopyWorkspace.__init__:*.rename": "ours: the copy in the state dir",
    "codeloop.workspace.copy:CopyWorkspace.__init__:shutil.rmtree": "ours: a partial copy",
    "codeloop.workspace.copy:CopyWorkspace.discard:shutil.rmtree": "ours: the private copy in the state dir",
    # --- the sandbox -------------------------------------------------------------------------
    "codeloop.sandbox.upper:sanitize_upper:os.walk": _QUIESCENT,
    "codeloop.sandbox.upper:sanitize_upper:os.lstat": _QUIESCENT,
    "codeloop.sandbox.upper:sanitize_upper:os.unlink": _QUIESCENT,
    "codeloop.sandbox.upper:sanitize_upper:os.chmod": _QUIESCENT,
    "codeloop.sandbox.upper:remove_tree:os.walk": _QUIESCENT,
    "codeloop.sandbox.upper:remove_tree:os.path.islink": _QUIESCENT,
    "codeloop.sandbox.upper:remove_tree:os.chmod": _QUIESCENT,
    "codeloop.sandbox.upper:remove_tree:shutil.rmtree": _QUIESCENT,
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._merge:*.iterdir": _QUIESCENT,
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._scratch:tempfile.mkdtemp": "ours: a run's scratch dir",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._scratch:*.mkdir": "ours: a run's scratch dir",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._overlay_layers:*.mkdir": "ours: layer dirs a caller gives",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._mount:os.chown": "ours: a run's fresh upper dir",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._git_config:*.is_file": "ours: runs dir beside the view",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._git_config:*.mkdir": "ours: runs dir beside the view",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._git_config:*.write_text": "ours: runs dir beside the view",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox.__init__:os.access": "host: the system python",
    "codeloop.sandbox.bwrap_backend:_rlimits:os.access": "host: the prlimit program",
    "codeloop.sandbox.bwrap_profile:namespace_nproc_works:os.access": "host: the prlimit program",
    "codeloop.sandbox.bwrap_profile:_system_view:os.path.islink": "host: top-level system dirs",
    "codeloop.sandbox.bwrap_profile:_system_view:os.path.isdir": "host: top-level system dirs",
    "codeloop.sandbox.bwrap_profile:_system_view:os.readlink": "host: top-level system dirs",
    "codeloop.sandbox.process:run_process:subprocess.Popen": "host: the sandbox launcher",
    "codeloop.sandbox.docker_backend:DockerSandbox.run:subprocess.run": "host: the docker client",
    "codeloop.sandbox.docker_backend:DockerSandbox.run:*.stat": "ours: the copy workspace's top dir",
    "codeloop.sandbox.docker_backend:docker_reachable:subprocess.run": "host: the docker client",
    "codeloop.sandbox.egress:EgressProxy.start:*.unlink": "ours: the proxy's socket in our dir",
    "codeloop.sandbox.egress:EgressProxy.start:*.chmod": "ours: the proxy's socket in our dir",
    "codeloop.sandbox.egress:EgressProxy.close:*.unlink": "ours: the proxy's socket in our dir",
    "codeloop.sandbox.egress_forwarder:main:os.execv": "host: the system python in the sandbox",
    "codeloop.session.network:SessionNetwork.__init__:tempfile.mkdtemp": "ours: the private dir of the session's proxy socket",
    "codeloop.sandbox.probe:_run:subprocess.run": "host: bwrap probes",
    "codeloop.index.ripgrep:_version:*.is_file": "host: an rg candidate in codeloop's own environment or on PATH",
    "codeloop.index.ripgrep:_version:os.access": "host: an rg candidate in codeloop's own environment or on PATH",
    "codeloop.index.ripgrep:_version:subprocess.run": "host: `rg --version` of a candidate in codeloop's own environment or on PATH",
    "codeloop.sandbox.probe:_trial:*.read_text": "ours: the probe's temp dir",
    "codeloop.sandbox.probe:_trial:*.write_text": "ours: the probe's temp dir",
    "codeloop.sandbox.probe:_trial:os.chown": "ours: the probe's temp dir",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._idmapped_locked:*.mkdir": "ours: the private runs dir beside the view",
    "codeloop.sandbox.bwrap_backend:BwrapSandbox._runs_dir:tempfile.mkdtemp": "ours: the private runs dir",
    "codeloop.sandbox.idmap:_identity:os.open": "ours: a directory codeloop idmaps (the view, a layer, a run dir); O_DIRECTORY, only fstat'ed",
    "codeloop.sandbox.idmap:_hold_namespace:os.access": "host: the nsenter program",
    "codeloop.sandbox.idmap:_hold_namespace:subprocess.Popen": "host: nsenter holding the private mount namespace",
    "codeloop.sandbox.idmap:_hold_namespace:os.open": "host: /proc/PID/ns/mnt of our own holder",
    "codeloop.sandbox.idmap_helper:_userns:open": "host: /proc/PID uid and gid maps of our own helper",
    "codeloop.sandbox.idmap_helper:_userns:os.open": "host: /proc/PID/ns/user of our own helper",
    "codeloop.sandbox.etc_view:etc_entries:*.glob": "host: /etc (the allow-list, read-only binds)",
    "codeloop.sandbox.etc_view:etc_entries:os.path.lexists": "host: /etc (the allow-list, read-only binds)",
    "codeloop.sandbox.user_tasks:tasks_of:os.listdir": "host: /proc and /proc/PID/task, to count this user's tasks",
    "codeloop.sandbox.user_tasks:tasks_of:os.stat": "host: /proc/PID, whose owner is the process's uid",
    "codeloop.sandbox.tree_watch:_fields:open": "host: /proc/PID/status and smaps of the command's tree",
    "codeloop.sandbox.tree_watch:children:open": "host: /proc/PID/task/*/children of the command's tree",
    "codeloop.sandbox.tree_watch:children:os.listdir": "host: /proc/PID/task of the command's tree",
    "codeloop.sandbox.tree_watch:tmpfs_used:os.statvfs": "host: the command's tmpfs mounts through /proc/PID/root",
    "codeloop.sandbox.cgroups:CommandCgroup._make:*.mkdir": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:CommandCgroup.kill:*.read_text": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_candidates:*.exists": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_cgroup_mounts:*.read_text": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_count:*.read_text": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_own_paths:*.read_text": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_removed:*.rmdir": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_trial:*.read_text": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_trial:subprocess.Popen": "host: /bin/sleep moved into a trial cgroup",
    "codeloop.sandbox.cgroups:_v2_ready:*.read_text": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_v2_ready:os.access": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:_write:open": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:sweep_stale:*.exists": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.cgroups:sweep_stale:*.glob": "host: /sys/fs/cgroup and /proc (the command's own cgroup)",
    "codeloop.sandbox.probe:_trial:tempfile.TemporaryDirectory": "ours: the probe's temp dir",
    "codeloop.handoff.branch:commit_plan:tempfile.TemporaryDirectory": "ours: the temporary index file a branch commit is built in (GIT_INDEX_FILE), never the repository's",
    "codeloop.sandbox.probe:_trial:*.mkdir": "ours: the probe's temp dir",
    "codeloop.sandbox.probe:_trial:*.exists": "ours: the probe's temp dir",
    "codeloop.sandbox.probe:_trial:os.chmod": "ours: the probe's temp dir",
    "codeloop.sandbox.probe:_userns:*.exists": "host: /proc/sys kernel settings",
    "codeloop.sandbox.probe:_userns:*.read_text": "host: /proc/sys kernel settings",
    # --- the project's Python environment (verify.python_env) ---------------------------------
    # Each is outside every repository (`_Finder._inside_repo` sends those to SafeRoot): the
    # user's own environment ($VIRTUAL_ENV, $PATH, pyenv, poetry) or an interpreter's prefix.
    "codeloop.verify.python_env:_Finder._activated:*.is_file": _USER_ENV,
    "codeloop.verify.python_env:_Finder._configured:*.is_file": _USER_ENV,
    "codeloop.verify.python_env:_Finder._on_path:*.is_dir": _USER_ENV,
    "codeloop.verify.python_env:_Finder._on_path:*.is_file": _USER_ENV,
    "codeloop.verify.python_env:_Finder._on_path:os.access": _USER_ENV,
    "codeloop.verify.python_env:_Finder._pyenv:*.is_file": "user: a version dir in the user's pyenv root",
    "codeloop.verify.python_env:_Finder._pyenv_for_repo:*.is_dir": "user: the user's pyenv root",
    "codeloop.verify.python_env:_Finder._repo_venv:*.is_file": "user: $UV_PROJECT_ENVIRONMENT outside the repository",
    "codeloop.verify.python_managers:poetry_env:*.is_file": "user: the user's poetry virtualenvs dir",
    "codeloop.verify.python_managers:poetry_env:*.iterdir": "user: the user's poetry virtualenvs dir",
    "codeloop.verify.python_managers:poetry_env:*.stat": "user: the user's poetry virtualenvs dir",
    "codeloop.verify.python_managers:pyenv_version:*.is_dir": "user: a version dir in the user's pyenv root",
    "codeloop.verify.python_managers:user_text:*.open": "user: a small file of the user's pyenv or poetry config (64 KiB at most)",
    "codeloop.verify.pyvenv:_executable_file:*.stat": _PREFIX,
    "codeloop.verify.pyvenv:installation:*.is_file": _PREFIX,
    "codeloop.verify.env_access:unreadable:os.stat": "host: a directory to be bound into the sandbox (repository paths go through SafeRoot)",
    "codeloop.verify.env_access:unreadable:os.access": "host: a directory to be bound into the sandbox (repository paths go through SafeRoot)",
    # --- the index's cache -------------------------------------------------------------------
    "codeloop.index.store:connect:*.mkdir": "ours: the cache dir",
    "codeloop.index.store:connect:sqlite3.connect": "ours: the index database in the cache",
    "codeloop.index.store:index_dirs:*.is_dir": "ours: the cache dir",
    "codeloop.index.store:index_dirs:*.iterdir": "ours: the cache dir",
    "codeloop.index.store:read_origin:*.read_text": "ours: an index dir's origin file",
    "codeloop.index.store:write_origin:*.mkdir": "ours: an index dir",
    "codeloop.index.store:write_origin:*.write_text": "ours: an index dir's origin file",
    "codeloop.index.store:write_origin:*.replace": "ours: an index dir's origin file",
    "codeloop.index.lexical:LexicalIndex.load:*.read_text": "ours: the index dir",
    "codeloop.index.lexical:LexicalIndex.save:*.mkdir": "ours: the index dir",
    "codeloop.index.lexical:LexicalIndex.save:*.write_text": "ours: the index dir",
    "codeloop.index.lexical:LexicalIndex.save:*.is_dir": "ours: the index dir",
    "codeloop.index.lexical:LexicalIndex.upgrade_saved:*.is_dir": "ours: a saved BM25 dir",
    "codeloop.index.lexical:LexicalIndex.upgrade_saved:*.is_file": "ours: a saved BM25 dir",
    "codeloop.index.lexical:LexicalIndex.save:*.rename": "ours: a saved BM25 dir swapped in",
    "codeloop.index.lexical:LexicalIndex.save:shutil.rmtree": "ours: the temporary and the "
    "replaced BM25 dirs in the index dir",
    "codeloop.index.registry:open_index:*.exists": "ours: index dirs in the cache",
    "codeloop.index.registry:open_index:*.is_dir": "ours: index dirs in the cache",
    "codeloop.index.embeddings:save_vectors:*.open": "ours: chunk vectors in the index cache",
    "codeloop.index.embeddings:save_vectors:*.replace": "ours: chunk vectors in the index "
                                                        "cache",
    "codeloop.index.embeddings:vectors_home:*.is_dir": "ours: an index dir in the cache",
    "codeloop.index.registry:share_with_seed:*.exists": "ours: the repository's index dir in "
    "the cache",
    "codeloop.index.registry:share_with_seed:*.rename": "ours: a copied index dir put in place "
    "in the cache",
    "codeloop.index.registry:share_with_seed:shutil.rmtree": "ours: a temporary index dir in "
    "the cache",
    "codeloop.index.service:RepoIndex.copy_to:shutil.copytree": "ours: an index dir copied to "
    "another in the cache",
    "codeloop.index.service:RepoIndex.copy_to:sqlite3.connect": "ours: the copy's index "
    "database in the cache",
    "codeloop.index.registry:copy_seed:shutil.copytree": "ours: seeding one index dir from "
    "another (its BM25 parts hard-linked)",
    "codeloop.index.registry:copy_seed:*.is_dir": "ours: a seed index dir's BM25 parts",
    "codeloop.index.registry:copy_seed:shutil.rmtree": "ours: a half-linked BM25 dir of a new "
    "index dir",
    "codeloop.index.registry:discard_index:*.is_dir": "ours: an index dir",
    "codeloop.index.registry:discard_index:shutil.rmtree": "ours: an index dir",
    "codeloop.index.registry:_prune_locked:*.is_dir": "user: the root an index records (is it gone?)",
    "codeloop.index.registry:_prune_locked:shutil.rmtree": "ours: an index dir",
    "codeloop.index.exact:_ripgrep:subprocess.run": "host: ripgrep --no-follow on the trusted root",
    "codeloop.tools.grep:_rg:subprocess.run": "host: ripgrep --no-follow on a path lstat'ed as no link",
    # --- git in the user's repository -------------------------------------------------------
    # --- codeloop's own data, config and the user's own paths ------------------------------
    "codeloop.config:_read_toml:*.is_file": "user: the user's own config file",
    "codeloop.config:_read_toml:*.open": "user: the user's own config file",
    "codeloop.project_trust:_load:*.read_text": "ours: trusted-projects.json in the data dir",
    "codeloop.project_trust:_save:os.open": "ours: trusted-projects.json in the data dir",
    "codeloop.project_trust:_save:os.replace": "ours: trusted-projects.json in the data dir",
    "codeloop.session.entry:check_repo:*.exists": "user: the --repo root itself",
    "codeloop.session.entry:check_repo:*.is_dir": "user: the --repo root itself",
    "codeloop.sqlite_local:ThreadConnections.get:sqlite3.connect": "ours: the event, memory and tenant databases in the data dir",
    "codeloop.session.pg_pool:open_pool:*.open": "ours: opens a PostgreSQL connection pool (events, memory, tenants), no file",
    "codeloop.memory.stems:_conn:sqlite3.connect": "ours: an in-memory SQLite (':memory:', no file) whose FTS5 stems terms",
    "codeloop.server.auth:TokenStore.__init__:*.exists": "ours: token files in the data dir",
    "codeloop.server.auth:TokenStore._file_users:*.exists": "ours: token files in the data dir",
    "codeloop.server.auth:TokenStore._file_users:*.read_text": "ours: token files in the data dir",
    "codeloop.server.auth:TokenStore._import_file:*.exists": "ours: token files in the data dir",
    "codeloop.server.auth:TokenStore._import_file:os.replace": "ours: tokens.json, renamed once imported into PostgreSQL",
    "codeloop.server.auth:TokenStore.admin_token:*.read_text": "ours: token files in the data dir",
    "codeloop.server.auth:_write_private:os.open": "ours: token files in the data dir",
    "codeloop.server.auth:_write_private:os.chmod": "ours: token files in the data dir",
    "codeloop.server.auth:_write_private:os.replace": "ours: token files in the data dir",
    "codeloop.server.service:SessionService.workspace:*.exists": "ours: a session's state dir",
    "codeloop.policy.hook_pins:_state:os.open": "user: a hook file outside the repository the user named in their config; O_NONBLOCK, fstat'ed, hashed only",
    "codeloop.policy.hook_pins:_state:os.path.lexists": "user: tells a hook path that SafeRoot would not reach from one that is absent (never followed)",
    "codeloop.memory.instructions:user_instructions:*.read_bytes": "user: the user's own ~/.config/codeloop/AGENTS.md",
    "codeloop.cli.server_cmds:allowed_roots:*.is_dir": "user: an --allow-root directory the operator names",
    "codeloop.mcp.connection:McpHub._transport:tempfile.TemporaryFile": (
        "ours: an unnamed temporary file holding a stdio MCP server's stderr"),
    "codeloop.private_paths:private_dir:*.mkdir": "ours: the data dir, made 0700",
    "codeloop.private_paths:private_file:os.open": "ours: the event log and token files, made 0600 with O_EXCL",
    "codeloop.private_paths:tighten:os.stat": "ours: the data dir and its private files",
    "codeloop.private_paths:tighten:os.chmod": "ours: the data dir and its private files",
    "codeloop.policy.hooks:run_hook:subprocess.Popen": "user: a hook the user configured (class 41 pins it)",
    "codeloop.policy.rules:path_ref:os.path.isdir": "user: a path a tool call names, stat'ed to match `dir/` rules before anything runs; no content read",
    "codeloop.llm.llama_probe:check_decodes:subprocess.run": "host: our python probing the user's model file",
    "codeloop.llm.local_provider:check_gguf:*.is_file": "user: the model file the user names",
    "codeloop.llm.local_provider:check_gguf:*.open": "user: the model file the user names",
    "codeloop.llm.scripted:ScriptedModel.from_file:*.read_text": "user: a script file the user names",
    "codeloop.demo:make_demo_repo:shutil.copytree": "ours: the bundled demo repository into the data dir (or a new --keep DIR)",
    "codeloop.cli.demo_cmds:register.demo:*.exists": "user: the --keep directory the user names, which must not exist yet",
    "codeloop.cli.edit_cmds:patch_command:*.read_text": "user: the patch file the user names",
    "codeloop.cli.edit_cmds:patch_command:*.is_dir": "user: the --repo root itself",
    "codeloop.cli.eval_output:option_directory:*.mkdir": "user: a directory an eval option names (--out, --work-dir, --trajectories)",
    "codeloop.cli.eval_output:record_results:*.open": "user: the --out records file",
    "codeloop.cli.eval_report_cmds:report:*.mkdir": "user: the report's --out directory",
    "codeloop.cli.eval_report_cmds:report:*.write_text": "user: report.html / report.md in --out",
    "codeloop.cli.eval_report_cmds:_trajectory_of:*.is_dir": "user: the RUN path given (a file or a dir of records)",
    "codeloop.cli.eval_report_cmds:viewer_pages:*.mkdir": "user: trajectories/ in the report's --out directory",
    "codeloop.cli.eval_report_cmds:viewer_pages:*.write_text": "user: a viewer page in --out/trajectories",
    "codeloop.cli.view_cmds:write_viewer:*.write_text": "user: the viewer page (--out FILE, or beside FILE)",
    "codeloop.server.viewer_page:_static:*.read_text": "ours: the package's own static viewer files",
    "codeloop.cli.index_cmds:_open:*.is_dir": "user: the repository root itself",
    "codeloop.cli.index_gc_cmds:_size:*.rglob": "ours: an index dir in the cache",
    "codeloop.cli.index_gc_cmds:_size:*.is_file": "ours: an index dir in the cache",
    "codeloop.cli.index_gc_cmds:_size:*.stat": "ours: an index dir in the cache",
    "codeloop.cli.policy_cmds:_call_args:*.read_text": "user: a file the user names",
    "codeloop.cli.policy_cmds:check_command:*.is_dir": "user: the --repo root itself",
    "codeloop.cli.policy_cmds:scan_command:*.read_text": "user: a file the user names",
    "codeloop.cli.session_cmds:register.export:*.write_text": "user: the --out file",
    "codeloop.cli.pr_cmds:pr_cmd:*.write_text": "user: the --out file",
    "codeloop.handoff.pr:open_pull_request:tempfile.TemporaryDirectory": "ours: the empty directory gh runs in, holding the PR body file",
    "codeloop.handoff.pr:open_pull_request:*.write_text": "ours: the PR body file in our temp dir",
    "codeloop.handoff.pr:open_pull_request:subprocess.run": "host: the user's `gh`, run with --repo in our empty temp dir, never in the repository",
    "codeloop.cli.memory_cmds:export:*.write_text": "user: the --out file of `memory export`",
    "codeloop.cli.memory_cmds:import_:*.read_text": "user: the file `memory import` is given",
    "codeloop.session.memory_admin:MemoryAdmin._repo_for:*.is_dir": "user: the repository a memory is added for (--repo, or a server path already inside the allowed roots)",
    "codeloop.cli.session_cmds:session_diff:*.exists": "ours: a session's state dir",
    "codeloop.cli.session_cmds:session_diff:*.is_dir": "user: the repository root a session recorded (is it gone?)",
    "codeloop.session.export:read_trajectory:*.read_text": "user: a trajectory file the user names",
    "codeloop.cli.verify_cmds:verify_cmd:*.is_dir": "user: the repository root itself",
    "codeloop.cli.verify_cmds:verify_cmd:shutil.rmtree": "ours: the verify run's state dir",
    "codeloop.cli.workspace_cmds:open_session_workspace:*.is_file": "ours: the event store and a state dir",
    "codeloop.cli.workspace_cmds:open_session_workspace:*.is_dir": "user: the repository root a session recorded (is it gone?)",
}

# The harness prepares, runs and judges benchmark tasks in checkouts and environments it
# builds itself; one reason covers the package.
_EVAL_PACKAGE = "codeloop.eval."
_EVAL = "eval: the benchmark harness' own environments and task checkouts"


def _listed(site: Site) -> str | None:
    default = _EVAL if site.module.startswith(_EVAL_PACKAGE) else None
    return ALLOWED.get(str(site), default)


def test_every_host_file_site_is_listed_with_a_reason() -> None:
    sites = scan_tree(PACKAGE)
    missing = sorted(str(s) for s in sites if _listed(s) is None)
    assert not missing, (
        "host code touches a path outside the safe file API:\n  " + "\n  ".join(missing)
        + "\nA path under a workspace or repository must go through "
        "codeloop.workspace.hostfs.SafeRoot (it never follows a link). Anything else (our "
        "own data, a path the user names, the host system) goes into ALLOWED in "
        f"{Path(__file__).name} with its category and a one-line reason."
    )


def test_no_stale_entries() -> None:
    present = {str(s) for s in scan_tree(PACKAGE)}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, ("these ALLOWED entries match no call any more; remove them:\n  "
                       + "\n  ".join(stale))


def test_every_entry_names_a_category_and_a_reason() -> None:
    for key, reason in ALLOWED.items():
        category, _, why = reason.partition(":")
        assert category in CATEGORIES and len(why.strip()) > 8, f"{key}: {reason!r}"


def test_the_scanner_finds_what_it_must(tmp_path: Path) -> None:
    """The inventory is only as good as the scanner: a new unsafe read of each kind is found,
    and calls on a SafeRoot are not."""
    package = tmp_path / "codeloop"
    package.mkdir()
    (package / "leak.py").write_text(
        "import os, shutil, subprocess\n"
        "from pathlib import Path\n"
        "from codeloop.workspace.hostfs import SafeRoot\n"
        "def read(root: Path, rel: str) -> bytes:\n"
        "    tree = SafeRoot(root)\n"
        "    tree.read_bytes(rel)\n"
        "    SafeRoot(root).is_file(rel)\n"
        "    'a'.replace('a', 'b')\n"
        "    open(root / rel).read()\n"
        "    os.stat(root / rel)\n"
        "    shutil.copy(root / rel, '/tmp/x')\n"
        "    subprocess.run(['cat', rel], cwd=root)\n"
        "    return (root / rel).read_bytes()\n"
        "class Reader:\n"
        "    def walk(self, root: Path) -> None:\n"
        "        for _ in os.walk(root):\n"
        "            pass\n"
        "        (root / 'x').replace(root / 'y')\n"
    )
    found = {str(s) for s in scan_tree(package)}
    assert found == {
        "codeloop.leak:read:open", "codeloop.leak:read:os.stat", "codeloop.leak:read:shutil.copy",
        "codeloop.leak:read:subprocess.run", "codeloop.leak:read:*.read_bytes",
        "codeloop.leak:Reader.walk:os.walk", "codeloop.leak:Reader.walk:*.replace",
    }
