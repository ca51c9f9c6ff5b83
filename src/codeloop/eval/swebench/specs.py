"""Per repository and version: the Python, install recipe and test command of each task.

The facts in `specs.json` are the harness specification table of the `swebench` package
(version 3.0.17, `swebench/harness/constants/python.py`, `MAP_REPO_VERSION_TO_SPECS_PY`),
kept as data for the repositories of our instance set, with the table of where each
repository keeps its requirements (`MAP_REPO_TO_REQS_PATHS`). Newer `swebench` releases (4.x, 5.x)
no longer ship that table, so it is recorded here rather than imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from pydantic import BaseModel

from codeloop.errors import CodeloopError

_TABLE = Path(__file__).with_name("specs.json")


class SpecMissing(CodeloopError):
    """No install/test recipe is known for this repository and version."""


@dataclass(frozen=True)
class EnvSpec:
    repo: str
    version: str
    python: str
    install: str
    test_cmd: str
    # Either a requirements file name, "environment.yml", or space-separated package names.
    packages: str = ""
    pip_packages: tuple[str, ...] = ()
    pre_install: tuple[str, ...] = field(default_factory=tuple)
    # Where the repository keeps its pinned requirements (when `packages` names a file).
    requirements_paths: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A directory-safe name for the environment of this (repository, version)."""
        return f"{self.repo.replace('/', '+')}-{self.version}"

    @property
    def runner(self) -> str:
        """Which test-output format the test command writes: "pytest" or "sympy"."""
        return "sympy" if "bin/test" in self.test_cmd else "pytest"


class _RawSpec(BaseModel):
    python: str
    test_cmd: str
    install: str = ""
    packages: str = ""
    pip_packages: list[str] = []
    pre_install: list[str] = []


class _RawTable(BaseModel):
    specs: dict[str, dict[str, _RawSpec]]
    requirements_paths: dict[str, list[str]]


@cache
def _table() -> _RawTable:
    return _RawTable.model_validate_json(_TABLE.read_text("utf-8"))


def spec_for(repo: str, version: str) -> EnvSpec:
    """The recipe for `repo` at `version`; raises SpecMissing when the table has none."""
    table = _table()
    raw = table.specs.get(repo, {}).get(version)
    if raw is None:
        raise SpecMissing(
            f"no environment recipe for {repo} {version}",
            "only repositories and versions in the SWE-bench specification table are supported",
        )
    return EnvSpec(
        repo=repo,
        version=version,
        python=raw.python,
        install=raw.install,
        test_cmd=raw.test_cmd,
        packages=raw.packages,
        pip_packages=tuple(raw.pip_packages),
        pre_install=tuple(raw.pre_install),
        requirements_paths=tuple(table.requirements_paths.get(repo, ["requirements.txt"])),
    )
