"""Pick the tests most likely affected by a set of changed files, closest first.

A small import scan: a test file is related when it is a changed file itself, imports a
changed module (or the package that holds it), or is named for it (`test_<stem>.py`).
With the index's file graph, test files that import or reference a changed file are added
(this catches names re-exported through a package `__init__`). Go maps a changed file to
its package directory. Rust and unknown languages get none; the caller runs the wider suite.

The order is how directly a test bears on the change: changed tests, then tests named for
a changed module, then importers, then tests the graph alone links; within each, tests
nearer the changed files first. An edit to a hub module relates to most of a suite, and
a caller that can afford only some of it runs the head of this list.
"""

from __future__ import annotations

import configparser
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path

from codeloop.index.graph import FileGraph
from codeloop.workspace.hostfs import Entry, SafeRoot

_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", ".tox", "build", "dist", "__pycache__", "target"}
_PY_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w, ()*]+)|import\s+([\w., ]+))", re.MULTILINE)
_JS_IMPORT = re.compile(r"""(?:from\s+|require\(\s*|import\(\s*)['"](\.{1,2}/[^'"]+)['"]""")
_JS_EXT = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs")


def _is_py_test(rel: str) -> bool:
    name = posixpath.basename(rel)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _is_js_test(rel: str) -> bool:
    name = posixpath.basename(rel)
    return name.endswith(_JS_EXT) and (".test." in name or ".spec." in name or "/__tests__/" in f"/{rel}")


def _skipped(entry: Entry) -> bool:
    return entry.name in _SKIP_DIRS or entry.name.startswith(".")


def _walk(root: Path, wanted: tuple[str, ...]) -> Iterable[str]:
    """Regular files below `root` named `*wanted` (links are never followed)."""
    for entry in SafeRoot(root).walk(skip_dir=_skipped):
        if entry.is_file and entry.name.endswith(wanted):
            yield entry.rel


def _text(root: Path, rel: str) -> str | None:
    data = SafeRoot(root).read_if_file(rel)
    return None if data is None else data.decode("utf-8", "replace")


def _module_names(rel: str) -> set[str]:
    """Every dotted name the file could be imported as (src layouts strip a leading prefix)."""
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return {".".join(parts[i:]) for i in range(len(parts)) if parts[i:]}


def _py_imports(text: str) -> set[str]:
    names: set[str] = set()
    for found in _PY_IMPORT.finditer(text):
        module, imported, plain = found.groups()
        if plain:
            names.update(p.strip().split(" as ")[0] for p in plain.split(",") if p.strip())
        elif module and not module.startswith("."):
            names.add(module)
            names.update(f"{module}.{n.strip().split(' as ')[0]}" for n in imported.strip("()").split(",") if n.strip())
    return names


def pytest_testpaths(root: Path) -> list[str]:
    """The `testpaths` pytest is configured with (pytest.ini, pyproject, tox.ini, setup.cfg)."""
    for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(_text(root, name) or "", name)
        except configparser.Error:
            continue
        if parser.has_option(section, "testpaths"):
            return parser.get(section, "testpaths").split()
    try:
        data = tomllib.loads(_text(root, "pyproject.toml") or "")
    except tomllib.TOMLDecodeError:
        return []
    paths = data.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("testpaths", [])
    return [str(p) for p in paths] if isinstance(paths, list) else str(paths).split()


def _under(rel: str, dirs: list[str]) -> bool:
    return any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in dirs)


# How directly a test file bears on the change; lower runs first.
_CHANGED, _NAMED, _IMPORTS, _GRAPH = range(4)


def _python_related(root: Path, changed: list[str]) -> dict[str, int]:
    changed_py = [c for c in changed if c.endswith(".py")]
    if not changed_py:
        return {}
    modules = set().union(*(_module_names(c) for c in changed_py if not _is_py_test(c)))
    stems = {posixpath.basename(c).removesuffix(".py") for c in changed_py}
    out = {c: _CHANGED for c in changed_py if _is_py_test(c) and SafeRoot(root).is_file(c)}
    for rel in _walk(root, (".py",)):
        if not _is_py_test(rel) or rel in out:
            continue
        stem = posixpath.basename(rel).removesuffix(".py").removeprefix("test_").removesuffix("_test")
        if stem in stems:
            out[rel] = _NAMED
            continue
        text = _text(root, rel)
        if text is not None and modules & _py_imports(text):
            out[rel] = _IMPORTS
    # Tests outside the configured testpaths (examples, vendored code) are not the suite.
    testpaths = pytest_testpaths(root)
    return {r: tier for r, tier in out.items() if not testpaths or _under(r, testpaths)}


def _js_related(root: Path, changed: list[str]) -> dict[str, int]:
    changed_js = {c.rsplit(".", 1)[0] for c in changed if c.endswith(_JS_EXT)}
    if not changed_js:
        return {}
    out = {c: _CHANGED for c in changed if _is_js_test(c) and SafeRoot(root).is_file(c)}
    for rel in _walk(root, _JS_EXT):
        if not _is_js_test(rel) or rel in out:
            continue
        text = _text(root, rel)
        if text is None:
            continue
        base = posixpath.dirname(rel)
        for spec in _JS_IMPORT.findall(text):
            target = posixpath.normpath(posixpath.join(base, spec))
            target = target.rsplit(".", 1)[0] if target.endswith(_JS_EXT) else target
            if target in changed_js or f"{target}/index" in changed_js:
                out[rel] = _IMPORTS
                break
    return out


def _go_related(changed: list[str]) -> list[str]:
    dirs = {posixpath.dirname(c) for c in changed if c.endswith(".go")}
    return sorted(f"./{d}" if d else "." for d in dirs)


def graph_related(graph: FileGraph, changed: list[str], is_test: Callable[[str], bool]) -> set[str]:
    """Test files with an import or reference edge to a changed file."""
    targets = {graph.index[c] for c in changed if c in graph.index}
    if not targets:
        return set()
    return {
        graph.paths[src]
        for src, dst in zip(graph.src.tolist(), graph.dst.tolist(), strict=True)
        if dst in targets and is_test(graph.paths[src])
    }


def _shared_depth(rel: str, changed: list[str]) -> int:
    """Directories the test shares with the nearest changed file (`pkg/a/tests` and `pkg/a/x.py`: 2)."""
    parts = posixpath.dirname(rel).split("/")
    best = 0
    for other in changed:
        common = 0
        for a, b in zip(parts, posixpath.dirname(other).split("/"), strict=False):
            if a != b:
                break
            common += 1
        best = max(best, common)
    return best


def _ranked(found: dict[str, int], changed: list[str]) -> list[str]:
    return sorted(found, key=lambda rel: (found[rel], -_shared_depth(rel, changed), rel))


def related_tests(root: Path, changed: list[str], runner: str, graph: FileGraph | None = None) -> list[str]:
    """Targets for the test runner named `runner` (a `CommandSpec.name`), closest first."""
    if runner in ("pytest", "sympy bin/test"):
        found = _python_related(root, changed)
        if graph is not None:
            testpaths = pytest_testpaths(root)
            for test in graph_related(graph, changed, _is_py_test):
                if not testpaths or _under(test, testpaths):
                    found.setdefault(test, _GRAPH)
        return _ranked(found, changed)
    if runner == "go test":
        return _go_related(changed)
    if runner.endswith(" test") and runner.split()[0] in ("npm", "yarn", "pnpm"):
        found = _js_related(root, changed)
        if graph is not None:
            for test in graph_related(graph, changed, _is_js_test):
                found.setdefault(test, _GRAPH)
        return _ranked(found, changed)
    return []
