"""Exercism-layout exercises as suite tasks: the answer hidden, the gold patch, the judge."""

from __future__ import annotations

import json
from pathlib import Path

from codeloop.eval.suite.judge import judge
from codeloop.eval.suite.polyglot import exercise_task, needs_network

STUB = "def square(n):\n    pass\n"
EXAMPLE = "def square(n):\n    return n * n\n"
TESTS = ("import unittest\nfrom squares import square\n\n\nclass SquareTest(unittest.TestCase):\n"
         "    def test_two(self):\n        self.assertEqual(square(2), 4)\n\n"
         "    def test_three(self):\n        self.assertEqual(square(3), 9)\n")


def exercise(root: Path) -> Path:
    ex = root / "python" / "exercises" / "practice" / "squares"
    (ex / ".meta").mkdir(parents=True)
    (ex / ".docs").mkdir()
    (ex / "squares.py").write_text(STUB)
    (ex / "squares_test.py").write_text(TESTS)
    (ex / ".meta" / "example.py").write_text(EXAMPLE)
    (ex / ".meta" / "config.json").write_text(json.dumps({"files": {
        "solution": ["squares.py"], "test": ["squares_test.py"], "example": [".meta/example.py"]}}))
    (ex / ".docs" / "instructions.md").write_text("Square a number.\n")
    return ex


def test_an_exercise_becomes_a_task_without_its_answer(tmp_path: Path) -> None:
    ex = exercise(tmp_path)
    task = exercise_task(ex, "python", tmp_path / "task")
    assert task.id == "python/squares" and task.language == "python"
    assert "Square a number." in task.task and "squares.py" in task.task
    assert not (tmp_path / "task" / ".meta").exists(), "the reference solution stays hidden"
    assert task.protected == ["squares_test.py"] and task.parser == "unittest"
    assert "+    return n * n" in task.gold_patch and "-    pass" in task.gold_patch
    stub = judge(task, "", work_dir=tmp_path)
    assert not stub.resolved
    solved = judge(task, task.gold_patch, work_dir=tmp_path)
    assert solved.resolved and solved.per_test and len(solved.passed) == 2, solved.output_tail


def test_rust_exercises_that_need_crates_are_known(tmp_path: Path) -> None:
    ex = tmp_path / "ex"
    (ex / ".meta").mkdir(parents=True)
    (ex / "Cargo.toml").write_text('[package]\nname = "x"\n\n[dependencies]\n')
    assert not needs_network(ex, "rust")
    (ex / ".meta" / "Cargo-example.toml").write_text('[dependencies]\nitertools = "0.10"\n')
    assert needs_network(ex, "rust") and not needs_network(ex, "python")
