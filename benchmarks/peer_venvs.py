"""Private virtual environments for the peer tools the benchmarks compare against.

Each peer is pip-installed once into `benchmarks/.cache/<name>-venv`; a marker file records
a finished install so later runs start at once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"

OPENHANDS_DEPS = [
    "binaryornot", "cachetools", "charset-normalizer", "pydantic", "rapidfuzz", "whatthepatch",
    "gitpython", "grep-ast<0.10", "tree-sitter<0.25", "tree-sitter-language-pack==0.7.3",
    "flake8", "libcst==1.5.0", "mammoth", "markdownify", "pandas", "pdfminer.six",
    "python-pptx", "puremagic", "requests", "SpeechRecognition", "youtube-transcript-api",
]

# name -> list of pip install argument lists, run in order
PEERS: dict[str, list[list[str]]] = {
    "aider": [["aider-chat"]],
    "openhands": [
        ["--no-deps", "--ignore-requires-python", "openhands-aci"],
        OPENHANDS_DEPS,
    ],
}


def venv_python(name: str) -> Path:
    """The Python of the peer's venv, installing the peer first if needed."""
    venv = CACHE / f"{name}-venv"
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if marker.exists():
        return python
    CACHE.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for args in PEERS[name]:
        print(f"installing {name}: pip install {' '.join(args)}", file=sys.stderr, flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *args], check=True)
    marker.write_text("ok\n")
    return python


if __name__ == "__main__":
    for peer in sys.argv[1:] or list(PEERS):
        print(venv_python(peer))
