"""Project instructions: AGENTS.md files from the repository root down to the working dir,
and the user's own instructions file beside their config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeloop.config import user_instructions_path
from codeloop.workspace.hostfs import SafeRoot

MAX_INSTRUCTION_BYTES = 32_000


@dataclass(frozen=True)
class InstructionText:
    """One instruction file's text, where it came from, and whether its author is the user
    (their own file) or whoever wrote the repository."""

    source: str
    text: str
    trusted: bool


def find_instruction_files(repo: Path, workdir: Path | None = None) -> list[Path]:
    """AGENTS.md at the root and in each directory down to `workdir`, outermost first; one
    that is a link, or lies below one, is not an instruction file (never followed)."""
    repo = repo.resolve()
    target = (workdir or repo).resolve()
    if target != repo and repo not in target.parents:
        target = repo
    chain = [repo]
    for part in target.relative_to(repo).parts:
        chain.append(chain[-1] / part)
    tree = SafeRoot(repo)
    return [d / "AGENTS.md" for d in chain if tree.is_file(d / "AGENTS.md")]


def repository_instructions(repo: Path, workdir: Path | None = None) -> list[InstructionText]:
    """The repository's instruction files, size-capped, named by their relative path; read
    with no link followed."""
    tree = SafeRoot(repo.resolve())
    parts = []
    for path in find_instruction_files(repo, workdir):
        rel = path.relative_to(repo.resolve()).as_posix()
        data = tree.read_if_file(rel, MAX_INSTRUCTION_BYTES)
        if data is None:
            continue  # swapped for a link since it was found: refused
        parts.append(InstructionText(rel, _decode(data), trusted=False))
    return parts


def user_instructions(path: Path | None = None) -> InstructionText | None:
    """The user's own instructions (`~/.config/codeloop/AGENTS.md`), if they wrote any."""
    path = path or user_instructions_path()
    try:
        text = _decode(path.read_bytes())
    except OSError:  # absent (the usual case) or unreadable: no user instructions
        return None
    return InstructionText(str(path), text, trusted=True) if text else None


def _decode(data: bytes) -> str:
    return data[:MAX_INSTRUCTION_BYTES].decode("utf-8", "replace").strip()
