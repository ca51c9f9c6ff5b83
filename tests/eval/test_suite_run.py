"""`codeloop eval run` on generic suites: real sessions, the real sandbox, the suite's judge."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_cli import kept_settings
from tests.server.conftest import write_script
from tests.session.helpers import call, turn

from codeloop.eval.suite.judge import judge
from codeloop.eval.suite.run import judge_tail
from codeloop.eval.suite.tasks import SuiteError, SuiteTask, load_suite

pytestmark = pytest.mark.slow

CALC = "def add(a, b):\n    return a - b\n"
TESTS = ("import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
         "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
         "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n")
GOLD = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
        " def add(a, b):\n-    return a - b\n+    return a + b\n")
# "Passes" by gutting the test instead of fixing the code.
CHEAT = ("diff --git a/test_calc.py b/test_calc.py\n--- a/test_calc.py\n+++ b/test_calc.py\n"
         "@@ -6,1 +6,1 @@\n-        self.assertEqual(add(2, 3), 5)\n+        self.assertEqual(add(2, 3), -1)\n")
UNITTEST = "python3 -B -m unittest -v test_calc"


def python_task(task_id: str = "py-add", gold: str = GOLD, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "language": "python", "task": "add() subtracts; make it add",
            "files": {"calc.py": CALC, "test_calc.py": TESTS}, "test_command": UNITTEST,
            "parser": "unittest", "protected": ["test_calc.py"],
            "FAIL_TO_PASS": ["test_calc.py::T::test_add"],
            "PASS_TO_PASS": ["test_calc.py::T::test_zero"],
            "gold_patch": gold, **extra}


def shell_task(tmp: Path) -> dict[str, Any]:
    """A task whose code is a plain directory and whose judge is an exit code."""
    src = tmp / "shell-src"
    src.mkdir()
    (src / "greet.sh").write_text("echo helo\n")
    (src / "check.sh").write_text('[ "$(sh greet.sh)" = hello ]\n')
    gold = ("diff --git a/greet.sh b/greet.sh\n--- a/greet.sh\n+++ b/greet.sh\n@@ -1 +1 @@\n"
            "-echo helo\n+echo hello\n")
    return {"id": "sh-greet", "language": "shell", "task": "fix the greeting's spelling",
            "repo": "shell-src", "test_command": "sh check.sh", "protected": ["check.sh"],
            "gold_patch": gold}


def write_suite(tmp: Path, *tasks: dict[str, Any]) -> Path:
    path = tmp / "suite.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def codeloop(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=tmp, text=True,
                          capture_output=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp),
                               "CODELOOP_HOME": str(tmp / "home"),
                               "PYTHONPATH": ":".join(sys.path), **kept_settings()})


def test_the_oracle_resolves_tasks_of_both_kinds_and_a_rerun_resumes(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, python_task(), shell_task(tmp_path))
    out = tmp_path / "run.jsonl"
    done = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    records = {r["instance_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert {k: r["outcome"] for k, r in records.items()} == \
        {"py-add": "resolved", "sh-greet": "resolved"}, records
    py = records["py-add"]
    assert py["per_test"] is True and py["tests_passed"] == 2 and py["tests_failed"] == 0
    assert py["session_status"] == "finished" and py["judge_sandbox"] == "bwrap"
    assert py["metrics"]["tools"]["edit_file"]["calls"] >= 1 and py["language"] == "python"
    assert records["sh-greet"]["per_test"] is False
    again = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout.splitlines()[-1])
    assert summary["skipped"] == 2 and summary["resolved"] == 0
    assert len(out.read_text().splitlines()) == 2, "nothing ran twice"


def test_two_workers_run_every_task(tmp_path: Path) -> None:
    tasks = [python_task(f"py-{n}") for n in range(3)]
    suite = write_suite(tmp_path, *tasks)
    done = codeloop(tmp_path, "eval", "run", str(suite), "--workers", "2", "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(r["instance_id"] for r in lines[:-1]) == ["py-0", "py-1", "py-2"]
    assert lines[-1]["resolved"] == 3


def test_the_judge_puts_protected_tests_back(tmp_path: Path) -> None:
    task = SuiteTask.model_validate(python_task())
    cheated = judge(task, CHEAT, work_dir=tmp_path)
    assert not cheated.resolved and "test_calc.py::T::test_add" in cheated.reason
    assert judge(task, GOLD, work_dir=tmp_path).resolved


def test_a_task_past_its_time_limit_is_not_resolved(tmp_path: Path) -> None:
    task = SuiteTask.model_validate(python_task(test_command="sleep 30", parser="generic",
                                                FAIL_TO_PASS=[], PASS_TO_PASS=[],
                                                time_limit_s=2))
    verdict = judge(task, GOLD, work_dir=tmp_path)
    assert not verdict.resolved and "timed out after 2s" in verdict.reason


def test_bad_suites_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="no suite file"):
        load_suite(tmp_path / "none.jsonl")
    bad = write_suite(tmp_path, {"id": "x", "task": "t", "test_command": "true"})
    with pytest.raises(SuiteError, match=r"suite\.jsonl:1: not a task .*exactly one of"):
        load_suite(bad)
    bad = write_suite(tmp_path, python_task(parser="nope"))
    with pytest.raises(SuiteError, match="unknown parser 'nope'"):
        load_suite(bad)
    bad = write_suite(tmp_path, python_task(), python_task())
    with pytest.raises(SuiteError, match="appears twice"):
        load_suite(bad)
    escape = write_suite(tmp_path, python_task(files={"../x.py": ""}))
    done = codeloop(tmp_path, "eval", "run", str(escape), "--json")
    record = json.loads(done.stdout.splitlines()[0])
    assert record["outcome"] == "env_unavailable" and "not a plain relative path" in record["reason"]
    assert not (tmp_path / "x.py").exists()


def test_a_tasks_toolchain_reaches_the_judge_and_the_sessions_sandbox(tmp_path: Path) -> None:
    # A test runner installed outside the task and the system directories (as the polyglot
    # benchmark's jest is): bound read-only, first on PATH, its variable set, for the
    # session's verification as for the judge.
    runner = tmp_path / "runner"
    (runner / "bin").mkdir(parents=True)
    check = runner / "bin" / "check-greeting"
    check.write_text('#!/bin/sh\n[ "$(sh greet.sh)" = "$GREETING" ]\n')
    check.chmod(0o755)
    task = {**shell_task(tmp_path), "test_command": "check-greeting", "protected": [],
            "toolchain": {"ro_binds": [str(runner)], "path": [str(runner / "bin")],
                          "env": {"GREETING": "hello"}}}
    out = tmp_path / "run.jsonl"
    done = codeloop(tmp_path, "eval", "run", str(write_suite(tmp_path, task)), "--out", str(out))
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text().splitlines()[0])
    assert record["outcome"] == "resolved" and record["judge_sandbox"] == "bwrap", record
    # The finish gate ran the same command in the session's sandbox and let the oracle finish.
    assert record["metrics"]["tools"]["finish"]["errors"] == 0, record["metrics"]["tools"]
    assert record["metrics"]["verification_runs"] >= 1

    missing = {**task, "id": "sh-missing", "toolchain": {"ro_binds": [str(tmp_path / "nowhere")]}}
    with pytest.raises(SuiteError, match=r"nowhere.* is missing"):
        judge(SuiteTask.model_validate({**missing, "repo": str(tmp_path / "shell-src")}), "")


def test_toolchain_directories_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="absolute"):
        SuiteTask.model_validate({"id": "t", "task": "x", "files": {"a": "b"},
                                  "test_command": "true", "toolchain": {"ro_binds": ["rel"]}})


def test_roles_flag_runs_the_suite_with_planner_and_reviewer(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, python_task())
    out = tmp_path / "run.jsonl"
    done = codeloop(tmp_path, "eval", "run", str(suite), "--roles", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    [record] = map(json.loads, out.read_text().splitlines())
    assert record["outcome"] == "resolved" and record["session_status"] == "finished"
    # The oracle played planner and reviewer as well as coder.
    assert {"planner", "coder", "reviewer"} <= set(record["metrics"]["by_role"]), record


def test_a_blocked_finish_is_counted_in_the_record(tmp_path: Path) -> None:
    # The first finish breaks test_zero, which passed before the edit, so the gate sends it
    # back; the model repairs the edit and finishes again.
    script = [turn(call("edit_file", path="calc.py", old="return a - b", new="return a + b + 1")),
              turn(call("finish", summary="fixed")),
              turn(call("edit_file", path="calc.py", old="return a + b + 1", new="return a + b")),
              turn(call("finish", summary="fixed, zero too"))]
    model = write_script(tmp_path / "script.json", script)
    suite = write_suite(tmp_path, python_task())
    out = tmp_path / "run.jsonl"
    done = codeloop(tmp_path, "eval", "run", str(suite), "--model", f"scripted:{model}",
                    "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    [record] = map(json.loads, out.read_text().splitlines())
    assert record["outcome"] == "resolved", record
    assert record["finish_blocked"] == 1 == record["metrics"]["tools"]["finish"]["errors"]


def test_a_failed_judgement_records_the_end_of_the_test_output(tmp_path: Path) -> None:
    times = GOLD.replace("+    return a + b", "+    return a * b")  # add(2, 3) == 6
    suite = write_suite(tmp_path, python_task("py-wrong", gold=times), python_task())
    out = tmp_path / "run.jsonl"
    done = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    records = {r["instance_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    wrong = records["py-wrong"]
    assert wrong["outcome"] == "not_resolved" and "test_add" in wrong["reason"], wrong
    assert "AssertionError: 6 != 5" in wrong["judge_tail"], wrong["judge_tail"]
    assert records["py-add"]["judge_tail"] == ""


def test_the_recorded_tail_is_short_and_keeps_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUITE_API_TOKEN", "tok-4f9a8b7c6d5e4f3a2b1c")
    output = "\n".join(f"line {n}" for n in range(100)) + "\nauth with tok-4f9a8b7c6d5e4f3a2b1c\n"
    tail = judge_tail(output)
    assert "tok-4f9a8b7c6d5e4f3a2b1c" not in tail and "auth with" in tail
    assert len(tail.splitlines()) == 15 and "line 86" in tail and "line 85" not in tail
