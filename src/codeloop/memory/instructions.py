"""Project instructions: AGENTS.md files from the repository root down to the working dir."""

from __future__ import annotations

from pathlib import Path

MAX_INSTRUCTION_BYTES = 32_000


def find_instruction_files(repo: Path, workdir: Path | None = None) -> list[Path]:
    """AGENTS.md at the root and in each directory down to `workdir`, outermost first."""
    repo = repo.resolve()
    target = (workdir or repo).resolve()
    if target != repo and repo not in target.parents:
        target = repo
    chain = [repo]
    for part in target.relative_to(repo).parts:
        chain.append(chain[-1] / part)
    return [d / "AGENTS.md" for d in chain if (d / "AGENTS.md").is_file()]


def load_instructions(repo: Path, workdir: Path | None = None) -> str:
    """The instruction files' text, each under a header naming it; size-capped."""
    parts = []
    for path in find_instruction_files(repo, workdir):
        text = path.read_bytes()[:MAX_INSTRUCTION_BYTES].decode("utf-8", "replace").strip()
        rel = path.relative_to(repo.resolve()).as_posix()
        parts.append(f"## {rel}\n{text}")
    return "\n\n".join(parts)
