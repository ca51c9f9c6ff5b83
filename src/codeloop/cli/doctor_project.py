"""`codeloop doctor --repo P`: which interpreter and test command verification will use for a
repository, why, and whether the sandbox can read that interpreter."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from codeloop.cli.safe_text import shown
from codeloop.errors import ConfigError

if TYPE_CHECKING:
    from codeloop.verify.detect import Which
    from codeloop.verify.python_env import ProjectPython


def env_which(python: ProjectPython, repo: Path) -> Which:
    """`which` over the PATH commands get (the interpreter's bin dir first), looked up on the
    host without running anything; the repository's files through `SafeRoot`."""
    from codeloop.sandbox.environment import BASE_PATH
    from codeloop.workspace.hostfs import SafeRoot
    dirs = [*([python.bin_dir] if python.bin_dir else []), *map(Path, BASE_PATH.split(":"))]
    tree = SafeRoot(repo)

    def which(name: str) -> str | None:
        from codeloop.verify.pyvenv import under_any
        from codeloop.workspace.errors import UnsafePath
        for directory in dirs:
            if under_any(directory, [repo]):
                try:
                    st = tree.lstat((directory / name).relative_to(repo))
                except (OSError, UnsafePath):
                    st = None
                if st is not None and stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
                    return str(directory / name)
            elif shutil.which(name, path=str(directory)):
                return str(directory / name)
        return None

    return which


def project_report(repo: Path) -> dict[str, Any]:
    """What verification will use for `repo`, as data."""
    from codeloop.config import load_settings
    from codeloop.session.entry import check_repo
    from codeloop.session.setup import project_python
    from codeloop.verify.detect import detect
    from codeloop.verify.python_env import SYSTEM
    from codeloop.verify.settings import VerifySettings
    repo = Path(os.path.realpath(check_repo(repo)))
    settings = load_settings(repo)
    try:
        verify = VerifySettings.load(settings.verify)
    except ConfigError as exc:  # reported with the rest, not a reason to stop
        return {"repository": str(repo), "error": str(exc)}
    python = project_python(repo, settings)
    used = python or SYSTEM
    which = env_which(used, repo)
    plan = detect(repo, verify, which)
    missing = [f"{plan.test.name} is not installed in this environment: the tests cannot run"
               ] if plan.test and plan.test.name == "pytest" and python and not which("pytest") else []
    return {
        "repository": str(repo),
        "python": used.interpreter if python else "the Docker image's own python3",
        "why": used.rule if python else "the Docker backend runs the image's interpreter",
        "base": used.base.label if used.base else None,
        "shown_read_only": [str(p) for p in used.binds],
        "repository_path_leads_to_workspace": python is not None and not used.is_system and settings.sandbox,
        "sandbox_can_read": used.problem is None,
        "problem": used.problem,
        "test": plan.test.display() if plan.test else None,
        "test_source": plan.test.source if plan.test else None,
        "checks": [f"{c.category}: {c.display()}" for c in plan.checks],
        "notes": [*missing, *used.notes, *plan.notes],
    }


def print_project(report: dict[str, Any], console: Console) -> None:
    console.print(Text.assemble(("verification for ", "bold"), shown(report["repository"], "bold", one_line=True)))
    if "error" in report:
        console.print(Text.assemble(("  error: ", "red"), shown(report["error"])))
        return
    rows = [("python", report["python"]), ("why", report["why"]), ("base", report["base"] or "-"),
            ("shown read-only", ", ".join(report["shown_read_only"]) or "nothing more than the system")]
    if report["repository_path_leads_to_workspace"]:
        rows.append(("repository path", "leads to the workspace in the sandbox (venv scripts and "
                                        "editable installs reach the edited files)"))
    readable = "yes" if report["sandbox_can_read"] else f"NO: {report['problem']}"
    rows += [("sandbox can read it", readable),
             ("test command", f"{report['test']} ({report['test_source']})" if report["test"] else "(none found)")]
    rows += [("check", check) for check in report["checks"]]
    rows += [("note", note) for note in report["notes"]]
    for name, value in rows:
        style = "red" if name == "sandbox can read it" and not report["sandbox_can_read"] else ""
        console.print(Text.assemble(f"  {name}: ", shown(value, style)))
