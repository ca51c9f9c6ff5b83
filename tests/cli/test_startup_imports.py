"""Every command starts by importing the CLI: heavy libraries wait until a command needs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.test_cli import env_for

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


def test_memory_commands_load_neither_the_session_setup_nor_the_code_index(tmp_path: Path) -> None:
    # `codeloop memory` needs the memory store and the redactor: the session set-up and the
    # index service (scipy with them) cost it more CPU than everything else it did.
    unwanted = ("scipy", "codeloop.index.service", "codeloop.session.setup")
    code = ("import sys\nfrom codeloop.cli import main\n"
            "try:\n    main(['memory', 'list', '--all', '--json'])\nexcept SystemExit:\n    pass\n"
            f"print([m for m in {unwanted!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120, env=env_for(tmp_path), cwd=tmp_path)
    assert out.stdout.splitlines()[-1] == "[]", out.stdout + out.stderr
