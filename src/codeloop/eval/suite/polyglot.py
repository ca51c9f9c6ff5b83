"""Exercism-layout exercises (as in Aider's polyglot benchmark) as generic suite tasks.

An exercise directory holds the stub the solver edits, the tests, `.docs/instructions*.md`
and, under `.meta/`, the reference solution and `config.json` naming which file is which.
The task the agent sees is the exercise without `.meta/` (the answer) and the gold patch
turns the stubs into the reference solution.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path, PurePosixPath

from codeloop.eval.suite.polyglot_runners import JAVA_PROVIDED, LANGUAGES, default_toolchains
from codeloop.eval.suite.tasks import SuiteError, SuiteTask

HIDDEN = (".meta", ".approaches", ".articles", ".docs")


def _config(exercise: Path) -> dict[str, list[str]]:
    path = exercise / ".meta" / "config.json"
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError) as exc:
        raise SuiteError(f"{path}: no readable `files` table ({exc})", "") from exc
    return {k: [str(p) for p in v] for k, v in files.items() if isinstance(v, list)}


def _target(example: str, examples: list[str], solutions: list[str]) -> str:
    """Where a reference file goes: the solution file of its name; else the one solution file
    of its suffix no other reference file of that suffix claims by name (`.meta/example.py`
    is `squares.py`); else beside the first solution file under its own name (a Java
    reference's helper class)."""
    name, suffix = PurePosixPath(example).name, PurePosixPath(example).suffix
    named = [s for s in solutions if PurePosixPath(s).name == name]
    if named:
        return named[0]
    taken = {PurePosixPath(e).name for e in examples}
    free = [s for s in solutions
            if PurePosixPath(s).suffix == suffix and PurePosixPath(s).name not in taken]
    unplaced = [e for e in examples if PurePosixPath(e).suffix == suffix
                and not any(PurePosixPath(s).name == PurePosixPath(e).name for s in solutions)]
    if len(free) == 1 and len(unplaced) == 1:
        return free[0]
    parent = PurePosixPath(solutions[0]).parent if solutions else PurePosixPath(".")
    return str(parent / name)


def _file_diff(rel: str, before: str | None, after: str) -> str:
    old = [] if before is None else before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    if old == new:
        return ""
    if old and not old[-1].endswith("\n"):
        old[-1] += "\n\\ No newline at end of file\n"
    if new and not new[-1].endswith("\n"):
        new[-1] += "\n\\ No newline at end of file\n"
    header = f"diff --git a/{rel} b/{rel}\n"
    if before is None:
        header += "new file mode 100644\n"
    body = difflib.unified_diff(old, new, "/dev/null" if before is None else f"a/{rel}",
                                f"b/{rel}")
    return header + "".join(body)


def gold_patch(exercise: Path, files: dict[str, list[str]]) -> str:
    """The stubs turned into the reference solution, as one unified diff."""
    solutions, examples = files.get("solution", []), files.get("example", [])
    parts = []
    for example in examples:
        rel = _target(example, examples, solutions)
        current = exercise / rel
        before = current.read_text(encoding="utf-8") if current.is_file() else None
        parts.append(_file_diff(rel, before, (exercise / example).read_text(encoding="utf-8")))
    return "".join(parts)


def instructions(exercise: Path) -> str:
    docs = exercise / ".docs"
    texts = [(docs / name).read_text(encoding="utf-8")
             for name in ("introduction.md", "instructions.md", "instructions.append.md")
             if (docs / name).is_file()]
    return "\n\n".join(texts).strip()


def exercise_task(exercise: Path, language: str, dest: Path, time_limit_s: float = 300,
                  toolchains: Path | None = None) -> SuiteTask:
    """The exercise as a task whose code is a copy in `dest` without the answer; the track's
    test runner comes from the system or `toolchains` (see `benchmarks/polyglot_setup.sh`)."""
    lang = LANGUAGES[language]
    where = toolchains or default_toolchains()
    files = _config(exercise)
    slug = exercise.name
    shutil.copytree(exercise, dest, symlinks=True, ignore=shutil.ignore_patterns(*HIDDEN))
    solution = ", ".join(files.get("solution", []))
    task = (f"{instructions(exercise)}\n\nImplement the solution in {solution}. Do not change "
            "the tests; they must all pass.")
    return SuiteTask(id=f"{language}/{slug}", language=language, task=task, repo=str(dest),
                     test_command=lang.command(slug, where), parser=lang.parser,
                     report=lang.report, toolchain=lang.toolchain(where),
                     protected=files.get("test", []), gold_patch=gold_patch(exercise, files),
                     time_limit_s=time_limit_s)


def toolchain_missing(language: str, toolchains: Path | None = None) -> list[str]:
    """What the track needs that commands in the sandbox would not find (tools on their PATH,
    the Java jars, the JavaScript runner in `toolchains`)."""
    return LANGUAGES[language].missing(toolchains or default_toolchains())


def _has_dependencies(cargo: Path) -> bool:
    if not cargo.is_file():
        return False
    text = cargo.read_text(encoding="utf-8")
    section = text.split("[dependencies]", 1)[1] if "[dependencies]" in text else ""
    body = section.split("\n[", 1)[0]
    return any(line.strip() and not line.lstrip().startswith("#") for line in body.splitlines())


# `implementation "group:artifact:version"` in a build.gradle: a library the main code needs.
_GRADLE_LIBRARY = re.compile(r'^\s*implementation\s*\(?\s*["\']([^:"\']+:[^:"\']+)', re.MULTILINE)


def needs_network(exercise: Path, language: str) -> bool:
    """Whether the exercise or its reference solution needs packages from the network (Rust
    crates; Java libraries Debian does not provide): the benchmark runs offline."""
    if language == "rust":
        return any(_has_dependencies(exercise / p)
                   for p in ("Cargo.toml", ".meta/Cargo-example.toml"))
    if language == "java":
        gradle = exercise / "build.gradle"
        text = gradle.read_text(encoding="utf-8") if gradle.is_file() else ""
        return any(lib not in JAVA_PROVIDED for lib in _GRADLE_LIBRARY.findall(text))
    return False
