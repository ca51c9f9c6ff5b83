"""Exercism-layout exercises (as in Aider's polyglot benchmark) as generic suite tasks.

An exercise directory holds the stub the solver edits, the tests, `.docs/instructions*.md`
and, under `.meta/`, the reference solution and `config.json` naming which file is which.
The task the agent sees is the exercise without `.meta/` (the answer) and the gold patch
turns the stubs into the reference solution.
"""

from __future__ import annotations

import difflib
import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codeloop.eval.suite.tasks import SuiteError, SuiteTask
from codeloop.sandbox.environment import BASE_PATH

HIDDEN = (".meta", ".approaches", ".articles", ".docs")


@dataclass(frozen=True)
class Language:
    """How one track's tests run in the sandbox, and which parser reads them."""

    name: str
    tools: tuple[str, ...]  # what must be on PATH for the track to run at all
    parser: str
    report: str = ""

    def command(self, slug: str) -> str:
        q = shlex.quote
        if self.name == "python":
            module = slug.replace("-", "_") + "_test"
            return f"python3 -B -m unittest -v {q(module)}"
        if self.name == "go":
            return "GOCACHE=/tmp/go-cache GOPATH=/tmp/go GOFLAGS=-mod=mod go test -json ./..."
        if self.name == "rust":
            return ("CARGO_HOME=/tmp/cargo CARGO_TARGET_DIR=/tmp/target "
                    "cargo test --offline -- --include-ignored")
        if self.name == "cpp":
            # CMakeLists names the program after its directory: build from a copy so named.
            src, build = f"/tmp/src/{q(slug)}", "/tmp/build"
            return (f"mkdir -p /tmp/src && cp -r . {src} && "
                    f"cmake -S {src} -B {build} -DEXERCISM_RUN_ALL_TESTS=1 >/dev/null && "
                    f"cmake --build {build} -j 2 >/dev/null && "
                    f"{build}/{q(slug)} -r junit -o {self.report}")
        if self.name == "javascript":
            # Exercism marks all tests but the first as skipped (`xtest`); run them all.
            return ("sed -i 's/\\bxtest(/test(/g; s/\\bxit(/it(/g' *.spec.js && "
                    "npx --offline jest --ci --reporters=default --reporters=jest-junit ./*")
        if self.name == "java":
            return ("sed -i '/@Disabled/d' src/test/java/*.java && "
                    "gradle test --offline -q")
        raise SuiteError(f"no test command for the {self.name} track", "")


LANGUAGES: dict[str, Language] = {
    "python": Language("python", ("python3",), "unittest"),
    "go": Language("go", ("go",), "go-json"),
    "rust": Language("rust", ("cargo",), "cargo"),
    "cpp": Language("cpp", ("cmake", "g++", "make"), "junit", "/tmp/report.xml"),
    # jest and jest-junit must be installed where the sandbox finds them (see docs/eval.md).
    "javascript": Language("javascript", ("node", "npx", "jest"), "junit", "junit.xml"),
    "java": Language("java", ("java", "gradle"), "junit"),
}


def _config(exercise: Path) -> dict[str, list[str]]:
    path = exercise / ".meta" / "config.json"
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError) as exc:
        raise SuiteError(f"{path}: no readable `files` table ({exc})", "") from exc
    return {k: [str(p) for p in v] for k, v in files.items() if isinstance(v, list)}


def _target(example: str, solutions: list[str]) -> str:
    """Where a reference file goes: the solution file with its suffix when there is exactly
    one, else beside the first solution file under its own name."""
    suffix = PurePosixPath(example).suffix
    same = [s for s in solutions if PurePosixPath(s).suffix == suffix]
    if len(same) == 1:
        return same[0]
    parent = PurePosixPath(solutions[0]).parent if solutions else PurePosixPath(".")
    return str(parent / PurePosixPath(example).name)


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
    solutions = files.get("solution", [])
    parts = []
    for example in files.get("example", []):
        rel = _target(example, solutions)
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


def exercise_task(exercise: Path, language: str, dest: Path, time_limit_s: float = 300) -> SuiteTask:
    """The exercise as a task whose code is a copy in `dest` without the answer."""
    lang = LANGUAGES[language]
    files = _config(exercise)
    slug = exercise.name
    shutil.copytree(exercise, dest, symlinks=True, ignore=shutil.ignore_patterns(*HIDDEN))
    solution = ", ".join(files.get("solution", []))
    task = (f"{instructions(exercise)}\n\nImplement the solution in {solution}. Do not change "
            "the tests; they must all pass.")
    return SuiteTask(id=f"{language}/{slug}", language=language, task=task, repo=str(dest),
                     test_command=lang.command(slug), parser=lang.parser, report=lang.report,
                     protected=files.get("test", []), gold_patch=gold_patch(exercise, files),
                     time_limit_s=time_limit_s)


def toolchain_missing(language: str) -> list[str]:
    """The tools the track needs that commands in the sandbox would not find on their PATH."""
    return [t for t in LANGUAGES[language].tools if shutil.which(t, path=BASE_PATH) is None]


def _has_dependencies(cargo: Path) -> bool:
    if not cargo.is_file():
        return False
    text = cargo.read_text(encoding="utf-8")
    section = text.split("[dependencies]", 1)[1] if "[dependencies]" in text else ""
    body = section.split("\n[", 1)[0]
    return any(line.strip() and not line.lstrip().startswith("#") for line in body.splitlines())


def needs_network(exercise: Path, language: str) -> bool:
    """Whether the exercise or its reference solution needs packages from the network (Rust
    crates: the benchmark runs offline)."""
    if language != "rust":
        return False
    return any(_has_dependencies(exercise / p) for p in ("Cargo.toml", ".meta/Cargo-example.toml"))
