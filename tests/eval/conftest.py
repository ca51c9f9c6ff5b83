"""A tiny SWE-bench-style task made in tmp_path: a git repo with a bug, its mirror, patches."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeloop.eval.swebench.envs import TaskEnv
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.specs import EnvSpec


def _diff(text: str) -> str:
    """A diff written with `~` for its blank context lines (which are a single space)."""
    return "\n".join(" " if line == "~" else line for line in text.split("\n"))


CALC = '''"""A calculator with a bug in add."""


def add(a, b):
    return a - b


def sub(a, b):
    return a - b


def mul(a, b):
    total = 0
    for _ in range(b):
        total = total + a
    return total
'''

TESTS = '''from calc import add, sub


def test_sub():
    assert sub(5, 3) == 2
'''

GOLD = _diff('''diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -2,7 +2,7 @@
~
~
 def add(a, b):
-    return a - b
+    return a + b
~
~
 def sub(a, b):
''')

TEST_PATCH = _diff('''diff --git a/test_calc.py b/test_calc.py
--- a/test_calc.py
+++ b/test_calc.py
@@ -3,3 +3,7 @@
~
 def test_sub():
     assert sub(5, 3) == 2
+
+
+def test_add():
+    assert add(2, 3) == 5
''')

SPEC = EnvSpec(repo="acme/calc", version="1.0", python="3.11", install="",
               test_cmd="python -m pytest -rA -p no:cacheprovider")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


@dataclass
class FakeTask:
    inst: SweInstance
    mirrors: Path
    mirror: Path
    env_cache: Path
    env: TaskEnv
    jsonl: Path


def _record(base: str) -> dict[str, object]:
    return {
        "instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": base,
        "version": "1.0", "problem_statement": "add(2, 3) returns -1 instead of 5",
        "patch": GOLD, "test_patch": TEST_PATCH,
        # As in the published dataset: the test lists are JSON text inside the record.
        "FAIL_TO_PASS": json.dumps(["test_calc.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["test_calc.py::test_sub"]),
        "environment_setup_commit": base,
    }


def build_task(root: Path, files: dict[str, str], spec: EnvSpec = SPEC) -> FakeTask:
    """The calc task in `root` with the repository holding `files`: the source, its bare
    mirror, the instance and an environment registered as built."""
    src = root / "src"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    git("init", "-q", "-b", "main", cwd=src)
    git("add", ".", cwd=src)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "calc", cwd=src)
    base = git("rev-parse", "HEAD", cwd=src).strip()
    mirrors = root / "mirrors"
    mirror = mirrors / "acme+calc" / "repo"
    git("clone", "-q", "--bare", str(src), str(mirror), cwd=root)
    jsonl = root / "instances.jsonl"
    jsonl.write_text(json.dumps(_record(base)) + "\n")
    inst = SweInstance.model_validate(_record(base))
    # The environment as the builder would leave it, made offline: a venv that sees this
    # interpreter's pytest, registered in the cache with its ready marker.
    env_cache = root / "envs"
    env_root = env_cache / spec.key
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(env_root / "venv")], check=True)
    (env_root / "ready.json").write_text(json.dumps({"interpreter": "test"}))
    return FakeTask(inst, mirrors, mirror, env_cache, TaskEnv(spec, env_root, "test"), jsonl)


@pytest.fixture(scope="session")
def fake_task(tmp_path_factory: pytest.TempPathFactory) -> FakeTask:
    return build_task(tmp_path_factory.mktemp("swe"), {"calc.py": CALC, "test_calc.py": TESTS})


def fake_specs(repo: str, version: str) -> EnvSpec:
    assert (repo, version) == ("acme/calc", "1.0")
    return SPEC
