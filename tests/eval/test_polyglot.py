"""Exercism-layout exercises as suite tasks: the answer hidden, the gold patch, the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.eval.suite.judge import judge
from codeloop.eval.suite.polyglot import exercise_task, needs_network, toolchain_missing
from codeloop.eval.suite.polyglot_runners import default_toolchains

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


# The JavaScript runner is installed once by benchmarks/polyglot_setup.sh (.ci/run calls it);
# read before conftest points the cache at tmp_path.
TOOLCHAINS = default_toolchains()


def needs(language: str) -> pytest.MarkDecorator:
    missing = toolchain_missing(language, TOOLCHAINS)
    return pytest.mark.skipif(bool(missing), reason=f"the {language} toolchain is not installed "
                              f"({', '.join(missing)}): run benchmarks/polyglot_setup.sh")


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def js_exercise(root: Path) -> Path:
    """An Exercism-layout JavaScript exercise: ES module imports (babel) and an `xtest`."""
    ex = root / "javascript" / "exercises" / "practice" / "squares"
    write(ex, {
        "squares.js": "export const square = () => {\n  throw new Error('Remove this line');\n};\n",
        "squares.spec.js": (
            "import { square } from './squares';\n\n"
            "describe('square', () => {\n"
            "  test('of two', () => {\n    expect(square(2)).toEqual(4);\n  });\n\n"
            "  xtest('of minus three', () => {\n    expect(square(-3)).toEqual(9);\n  });\n"
            "});\n"),
        "babel.config.js": ("module.exports = {\n  presets: ['@exercism/babel-preset-javascript'],"
                            "\n  plugins: [],\n};\n"),
        ".meta/proof.ci.js": "export const square = (n) => n * n;\n",
        ".meta/config.json": json.dumps({"files": {
            "solution": ["squares.js"], "test": ["squares.spec.js"],
            "example": [".meta/proof.ci.js"]}}),
        ".docs/instructions.md": "Square a number.\n",
    })
    return ex


@needs("javascript")
def test_a_javascript_exercise_runs_with_jest_offline_and_is_judged_per_test(tmp_path: Path) -> None:
    task = exercise_task(js_exercise(tmp_path), "javascript", tmp_path / "task",
                         toolchains=TOOLCHAINS)
    assert task.parser == "junit" and task.toolchain.ro_binds == [str(TOOLCHAINS / "javascript")]
    solved = judge(task, task.gold_patch, work_dir=tmp_path)
    # Both tests ran: the `xtest` one too, though the test file is left as it is.
    assert solved.resolved and solved.per_test, solved.output_tail
    assert solved.passed == ["square::of minus three", "square::of two"]
    # A solution wrong for negative numbers fails exactly that test.
    wrong = task.gold_patch.replace("(n) => n * n", "(n) => n * Math.abs(n)")
    half = judge(task, wrong, work_dir=tmp_path)
    assert not half.resolved and half.failed == ["square::of minus three"], half.output_tail
    assert half.passed == ["square::of two"]


def java_exercise(root: Path) -> Path:
    """An Exercism-layout Java exercise: AssertJ, `@Disabled`, a reference with a helper class."""
    ex = root / "java" / "exercises" / "practice" / "squares"
    test = (
        "import static org.assertj.core.api.Assertions.assertThat;\n\n"
        "import org.junit.jupiter.api.Disabled;\nimport org.junit.jupiter.api.Test;\n\n"
        "public class SquaresTest {\n"
        "    @Test\n    public void ofTwo() {\n        assertThat(new Squares().square(2)).isEqualTo(4);\n    }\n\n"
        "    @Disabled(\"Remove to run test\")\n    @Test\n    public void ofMinusThree() {\n"
        "        assertThat(new Squares().square(-3)).isEqualTo(9);\n    }\n}\n")
    write(ex, {
        "src/main/java/Squares.java": ("class Squares {\n    int square(int n) {\n        throw new "
                                       "UnsupportedOperationException(\"Delete this statement\");"
                                       "\n    }\n}\n"),
        "src/test/java/SquaresTest.java": test,
        "build.gradle": 'dependencies {\n    testImplementation "org.assertj:assertj-core:3.25.1"\n}\n',
        ".meta/src/reference/java/Squares.java": ("class Squares {\n    int square(int n) {\n"
                                                  "        return Times.of(n, n);\n    }\n}\n"),
        ".meta/src/reference/java/Times.java": ("class Times {\n    static int of(int a, int b) {\n"
                                                "        return a * b;\n    }\n}\n"),
        ".meta/config.json": json.dumps({"files": {
            "solution": ["src/main/java/Squares.java"], "test": ["src/test/java/SquaresTest.java"],
            "example": [".meta/src/reference/java/Squares.java",
                        ".meta/src/reference/java/Times.java"]}}),
        ".docs/instructions.md": "Square a number.\n",
    })
    return ex


@needs("java")
def test_a_java_exercise_runs_with_javac_and_junit_offline_and_is_judged_per_test(
        tmp_path: Path) -> None:
    ex = java_exercise(tmp_path)
    assert not needs_network(ex, "java")
    task = exercise_task(ex, "java", tmp_path / "task", toolchains=TOOLCHAINS)
    # The helper class gets its own file beside the solution, not written over it.
    assert "+++ b/src/main/java/Times.java" in task.gold_patch
    assert "+        return Times.of(n, n);" in task.gold_patch
    stub = judge(task, "", work_dir=tmp_path)
    assert not stub.resolved and stub.per_test and len(stub.failed) == 2, stub.output_tail
    solved = judge(task, task.gold_patch, work_dir=tmp_path)
    # Both tests ran: the `@Disabled` one too, though the test file is left as it is.
    assert solved.resolved and solved.passed == ["SquaresTest::ofMinusThree()",
                                                 "SquaresTest::ofTwo()"], solved.output_tail
    broken = task.gold_patch.replace("return a * b;", "return a * b")
    assert not judge(task, broken, work_dir=tmp_path).resolved


def test_java_exercises_needing_libraries_debian_lacks_are_known(tmp_path: Path) -> None:
    (tmp_path / "build.gradle").write_text(
        'dependencies {\n    implementation "org.json:json:20190722"\n'
        '    testImplementation "org.junit.jupiter:junit-jupiter"\n}\n')
    assert not needs_network(tmp_path, "java")
    (tmp_path / "build.gradle").write_text(
        'dependencies {\n    implementation "io.reactivex.rxjava2:rxjava:2.2.12"\n}\n')
    assert needs_network(tmp_path, "java")
