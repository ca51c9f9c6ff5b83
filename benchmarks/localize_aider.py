"""Aider's repo map as a localisation ranker: `aider-chat` in its own venv under
benchmarks/.cache/, driven through `aider_repomap_runner.py` one job a line."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AIDER_VENV = HERE / ".cache" / "aider-venv"


class AiderMap:
    def __init__(self) -> None:
        python = AIDER_VENV / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"no Aider venv at {AIDER_VENV}: python -m venv {AIDER_VENV} && "
                             f"{python} -m pip install aider-chat  (or pass --no-aider)")
        self.proc = subprocess.Popen(
            [str(python), str(HERE / "aider_repomap_runner.py")], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self, root: Path, files: list[str], text: str, budget: int,
            render: bool) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        job = {"root": str(root), "files": files, "text": text, "budget": budget,
               "render": render}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                result: dict[str, Any] = json.loads(line[7:])
                return result
        raise RuntimeError("the Aider runner stopped")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def aider_span_in_map(map_text: str, spans: dict[str, list[str]]) -> bool:
    sections: dict[str, str] = {}
    current = None
    for line in map_text.splitlines():
        if line and not line[0].isspace() and not line.startswith("⋮") and line.endswith(":"):
            current = line[:-1]
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    for path, names in spans.items():
        body = sections.get(path, "")
        for name in names:
            short = name.rpartition(".")[2]
            if not re.search(rf"\b(def|class)\s+{re.escape(short)}\b", body):
                return False
    return True
