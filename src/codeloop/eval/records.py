"""Evaluation records as written by `codeloop eval`: one JSON object per instance and line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.errors import CodeloopError

JUDGED = ("resolved", "not_resolved")


class RecordsError(CodeloopError):
    """A run's records cannot be read."""


@dataclass(frozen=True)
class Record:
    """The fields reports and comparisons use, read leniently from older records too."""

    instance_id: str
    repo: str
    outcome: str
    model: str = ""
    language: str = "python"
    steps: int = 0
    cost_usd: float = 0.0
    agent_s: float = 0.0
    verify_s: float = 0.0
    judge_s: float = 0.0
    wall_s: float = 0.0
    trajectory: str = ""
    reason: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.outcome in JUDGED

    @property
    def resolved(self) -> bool:
        return self.outcome == "resolved"

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Record:
        metrics = doc.get("metrics") or {}
        cost = doc.get("cost_usd", metrics.get("cost_usd", 0.0))
        return cls(instance_id=str(doc["instance_id"]), repo=str(doc.get("repo", "")),
                   outcome=str(doc.get("outcome", "")), model=str(doc.get("model", "")),
                   language=str(doc.get("language") or "python"),
                   steps=int(doc.get("steps", 0)), cost_usd=float(cost or 0.0),
                   agent_s=float(doc.get("agent_s", 0.0)), verify_s=float(doc.get("verify_s", 0.0)),
                   judge_s=float(doc.get("judge_s", 0.0)), wall_s=float(doc.get("wall_s", 0.0)),
                   trajectory=str(doc.get("trajectory", "")), reason=str(doc.get("reason", "")),
                   metrics=metrics if isinstance(metrics, dict) else {})


def load_run(path: Path) -> list[Record]:
    """A run's records: a JSONL file, or a directory of them; a later line for the same
    instance and model replaces an earlier one (a resumed run appends)."""
    if not path.exists():
        raise RecordsError(f"{path}: no such file or directory",
                           "pass the JSONL file `codeloop eval ... --out` wrote")
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise RecordsError(f"{path}: the directory holds no .jsonl file",
                           "pass the JSONL file `codeloop eval ... --out` wrote")
    seen: dict[tuple[str, str], Record] = {}
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordsError(f"{file}:{number}: not JSON ({exc.msg})",
                                   "each line must be one record as `eval --out` writes it") from exc
            if not isinstance(doc, dict) or "instance_id" not in doc:
                continue  # a summary line, or something else that is not a record
            record = Record.from_json(doc)
            seen[(record.instance_id, record.model)] = record
    if not seen:
        raise RecordsError(f"{path}: no evaluation record in it",
                           "pass the JSONL file `codeloop eval ... --out` wrote")
    return list(seen.values())
