"""Every command starts by importing the CLI: heavy libraries wait until a command needs them."""

from __future__ import annotations

import subprocess
import sys

# Each costs a noticeable part of a second at every start (scipy.stats alone half of one).
# numpy, scipy and bm25s come with the code index, httpx with the model clients, pygments
# with syntax highlighting: only the commands that use them load them.
HEAVY = ("scipy", "numpy", "bm25s", "matplotlib", "mcp", "psycopg", "opentelemetry.sdk", "ray",
         "fastapi", "uvicorn", "httpx", "pygments", "yaml", "tree_sitter")


def test_the_cli_imports_no_heavy_library_at_start() -> None:
    code = ("import sys, codeloop.cli\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert out == "[]"
