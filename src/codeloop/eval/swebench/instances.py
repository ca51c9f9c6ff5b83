"""SWE-bench task instances: loading them from JSONL and reading what their patches touch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from codeloop.errors import CodeloopError

# File kinds the SWE-bench harness leaves out of the test command (data, not tests).
NON_TEST_SUFFIXES = (
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
)
_DIFF_TARGET = re.compile(r"^diff --git a/.* b/(.*)$", re.MULTILINE)


class InstanceError(CodeloopError):
    """The instances file is missing or holds a record we cannot read."""


class SweInstance(BaseModel):
    """One task: a repository at a commit, an issue, the gold and test patches, the tests."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str
    repo: str
    base_commit: str
    version: str
    problem_statement: str
    patch: str
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    hints_text: str = ""
    environment_setup_commit: str = ""

    @property
    def setup_commit(self) -> str:
        """The commit whose requirements the environment is built from."""
        return self.environment_setup_commit or self.base_commit

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _decode_json_list(cls, value: Any) -> Any:
        # The published dataset stores these lists as JSON text inside the JSON record.
        if isinstance(value, str):
            return json.loads(value) if value.strip() else []
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) else value

    @property
    def mirror_name(self) -> str:
        """The directory name `fetch` gives this repository's mirror (`owner+name`)."""
        return self.repo.replace("/", "+")

    @property
    def gold_files(self) -> list[str]:
        """The files the gold patch changes: what a good exploration reads."""
        return list(dict.fromkeys(_DIFF_TARGET.findall(self.patch)))

    def test_files(self) -> list[str]:
        """The test files the test patch touches, as the harness passes them to the test command."""
        return [
            path
            for path in _DIFF_TARGET.findall(self.test_patch)
            if not path.endswith(NON_TEST_SUFFIXES)
        ]


def load_instances(
    path: Path, *, repos: list[str] | None = None, ids: list[str] | None = None,
    limit: int | None = None,
) -> list[SweInstance]:
    """Read instances from a JSONL file, keeping those whose repo / id match the filters."""
    if not path.is_file():
        raise InstanceError(
            f"no instances file at {path}",
            "pass --instances FILE (a SWE-bench JSONL file, one instance per line)",
        )
    out: list[SweInstance] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                inst = SweInstance.model_validate_json(line)
            except ValidationError as exc:
                raise InstanceError(
                    f"{path}:{number}: not a SWE-bench instance: {exc.errors()[0]['msg']}",
                    "each line must be one JSON object with instance_id, repo, base_commit, "
                    "version, patch, test_patch, FAIL_TO_PASS and PASS_TO_PASS",
                ) from exc
            if repos and not any(r.lower() in inst.repo.lower() for r in repos):
                continue
            if ids and inst.instance_id not in ids:
                continue
            out.append(inst)
            if limit is not None and len(out) >= limit:
                break
    return out
