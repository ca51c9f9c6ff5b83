"""Project instructions: AGENTS.md files from the repository root down to the working dir."""

from __future__ import annotations

from pathlib import Path

from codeloop.workspace.hostfs import SafeRoot

MAX_INSTRUCTION_BYTES = 32_000


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


def load_instructions(repo: Path, workdir: Path | None = None) -> str:
    """The instruction files' text, each under a header naming it; size-capped."""
    tree = SafeRoot(repo.resolve())
    parts = []
    for path in find_instruction_files(repo, workdir):
        rel = path.relative_to(repo.resolve()).as_posix()
        data = tree.read_if_file(rel, MAX_INSTRUCTION_BYTES)
        if data is None:
            continue  # swapped for a link since it was found: refused
        parts.append(f"## {rel}\n{data.decode('utf-8', 'replace').strip()}")
    return "\n\n".join(parts)
