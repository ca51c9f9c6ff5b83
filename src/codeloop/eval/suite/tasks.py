"""The generic task format of `codeloop eval run SUITE.jsonl`, one task per line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from codeloop.errors import CodeloopError
from codeloop.sandbox.environment import Toolchain
from codeloop.verify.parsers import PARSERS


class SuiteError(CodeloopError):
    """A suite file is missing or holds a task that cannot be run."""


class TaskToolchain(BaseModel):
    """A test runner installed outside the system directories the sandbox shows (jest in a
    cache directory): what the task's commands, the agent's and the judge's, get besides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Host directories visible read-only at the same path inside the sandbox.
    ro_binds: list[str] = Field(default_factory=list)
    # Directories put first on PATH, and variables every command gets.
    path: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("ro_binds", "path")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        relative = [p for p in value if not Path(p).is_absolute()]
        if relative:
            raise ValueError(f"toolchain directories must be absolute paths: {relative}")
        return value

    def sandbox_toolchain(self) -> Toolchain | None:
        """The sandbox's form of it; None when the task needs nothing beyond the system."""
        if not (self.ro_binds or self.path or self.env):
            return None
        return Toolchain(ro_binds=[Path(p) for p in self.ro_binds],
                         bin_dirs=[Path(p) for p in self.path], env=dict(self.env))

    def require(self, task_id: str) -> None:
        """Raise, naming the directory, when one the task binds is not there."""
        absent = [p for p in self.ro_binds if not Path(p).is_dir()]
        if absent:
            raise SuiteError(f"task {task_id}: its toolchain directory {absent[0]} is missing",
                             "install the task's test runner there first (for the polyglot "
                             "exercises: benchmarks/polyglot_setup.sh)")


class SuiteTask(BaseModel):
    """One task: where its code comes from, what to do, and how to tell that it is done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    task: str = Field(min_length=1, description="What the agent is asked to do.")
    language: str = ""
    # The code: a directory or git repository (relative to the suite file), or inline files.
    repo: str = ""
    commit: str = ""
    files: dict[str, str] = Field(default_factory=dict)
    # Run once in the checkout before the session (and before judging), in the sandbox.
    setup: str = ""
    # How the judge runs the tests; `parser` names a codeloop.verify parser for per-test results.
    test_command: str
    parser: str = "generic"
    # A report file the test command writes (JUnit XML, for the `junit` parser), relative to
    # the checkout.
    report: str = ""
    # A test runner outside the system directories, bound read-only into the sandbox.
    toolchain: TaskToolchain = Field(default_factory=TaskToolchain)
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    # Files the judge puts back to the task's version before running (the exercise's tests).
    protected: list[str] = Field(default_factory=list)
    gold_patch: str = ""
    time_limit_s: float = Field(default=900.0, gt=0)

    @field_validator("parser")
    @classmethod
    def _known_parser(cls, value: str) -> str:
        if value not in PARSERS:
            raise ValueError(f"unknown parser {value!r}; one of {', '.join(sorted(PARSERS))}")
        return value

    @model_validator(mode="after")
    def _has_code(self) -> SuiteTask:
        if bool(self.repo) == bool(self.files):
            raise ValueError("give exactly one of `repo` (a directory) and `files` (inline)")
        return self


def load_suite(path: Path) -> list[SuiteTask]:
    """Every task of a suite file, with each bad line named; relative `repo`s are resolved
    against the suite file's directory."""
    if not path.is_file():
        raise SuiteError(f"no suite file at {path}",
                         "pass a JSONL file with one task per line (see docs/eval.md)")
    tasks: list[SuiteTask] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc: Any = json.loads(line)
            task = SuiteTask.model_validate(doc)
        except (json.JSONDecodeError, ValidationError) as exc:
            raise SuiteError(f"{path}:{number}: not a task ({_first_error(exc)})",
                             "each line is one JSON task; see docs/eval.md") from exc
        if task.id in seen:
            raise SuiteError(f"{path}:{number}: task id {task.id!r} appears twice",
                             "give every task its own id")
        seen.add(task.id)
        if task.repo and not Path(task.repo).is_absolute():
            task = task.model_copy(update={"repo": str((path.parent / task.repo).resolve())})
        tasks.append(task)
    if not tasks:
        raise SuiteError(f"{path}: the suite holds no task", "add one JSON task per line")
    return tasks


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg']}" if where else str(err["msg"])
    return str(exc)
