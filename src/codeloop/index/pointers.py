"""Precise pointers an issue text gives to files: traceback frames and file paths written
from another root (`/usr/lib/python3/site-packages/pkg/mod.py`), dotted module paths with
a name after them (`pkg.mod.Class.method`), `Class.method` pairs the repository defines;
and the module a test file tests (`tests/test_cse.py` -> `cse.py`)."""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable

from codeloop.index.path_tables import grouped
from codeloop.index.service import RepoIndex

# `File "/abs/path/pkg/mod.py", line 12, in func` (Python) and `pkg/mod.py:12` (pytest, linters).
_FRAME = re.compile(r'File "([^"\n]+)", line \d+')
# Runs of path characters (one match per run: no backtracking over long words), then the
# runs that look like a path to a file, with a `:line` after them or not.
_PATH_RUN = re.compile(r"[\w.\-/\\]+(?::\d+)?")
_FILE_PATH = re.compile(r"(.*\.[A-Za-z]{1,5})(:\d+)?")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){1,}")
_SPECIFIC = 3  # a suffix or name shared by more files than this points nowhere


def _tail_keys(path: str) -> list[str]:
    """Each suffix of `path` of at least two components (a bare file name is the focus's
    job: too many `__init__.py` and `utils.py`)."""
    parts = path.split("/")
    return ["/".join(parts[i:]) for i in range(max(len(parts) - 1, 1))]


def _modules(paths: list[str]) -> dict[str, str]:
    """Dotted module name (`pkg.sub.mod`, `pkg.sub` for its `__init__.py`) to its file."""
    out: dict[str, str] = {}
    for p in paths:
        if p.endswith(".py"):
            dotted = p[:-3].replace("/", ".")
            out[dotted.removesuffix(".__init__")] = p
            # `src/pkg/mod.py` is imported as `pkg.mod`.
            if dotted.startswith(("src.", "lib.")):
                out[dotted.split(".", 1)[1].removesuffix(".__init__")] = p
    return out


def _longest_suffix(written: str, suffixes: dict[str, list[str]]) -> list[str]:
    parts = written.replace("\\", "/").strip("/.").split("/")
    for i in range(len(parts)):
        hits = suffixes.get("/".join(parts[i:]))
        if hits:
            return hits if len(hits) <= _SPECIFIC else []
    return []


def frame_files(index: RepoIndex, text: str) -> list[str]:
    """Repository files the text's tracebacks and written paths name, innermost frame first
    (a traceback ends where the error was raised), then other paths in text order."""
    suffixes = index.path_table("path_tails", _tail_keys)
    frames: list[str] = _FRAME.findall(text)
    written: list[str] = []
    for run in _PATH_RUN.findall(text):
        m = _FILE_PATH.fullmatch(run)
        if m is None:
            continue
        if m.group(2):
            frames.append(m.group(1))
        elif "/" in run or "\\" in run:
            written.append(m.group(1))
    out: dict[str, None] = {}
    for path in [*reversed(frames), *written]:
        for p in _longest_suffix(path, suffixes):
            out.setdefault(p, None)
    return list(out)


def module_files(index: RepoIndex, text: str) -> list[str]:
    """Files of the dotted module paths the text writes, also with a class or function
    name after them (`xarray.core.dataset.Dataset.merge` names `xarray/core/dataset.py`)."""
    modules = index.memo("dotted_modules", lambda: _modules(index.paths()))
    out: dict[str, None] = {}
    for dotted in _DOTTED.findall(text):
        parts = dotted.split(".")
        # Two components at least: a bare package name (`sympy`) names no file worth reading.
        for end in range(len(parts), 1, -1):
            path = modules.get(".".join(parts[:end]))
            if path is not None:
                out.setdefault(path, None)
                break
    return list(out)


def _method_pairs(text: str) -> set[tuple[str, str]]:
    """The `Name.attribute` pairs the text writes (`Class.method`, but also `x.is_even`)."""
    return {(a, b) for a, b in (m.split(".")[-2:] for m in _DOTTED.findall(text))
            if len(b) >= 3}


def _capitalised(name: str) -> bool:
    return name.lstrip("_")[:1].isupper()


def method_files(index: RepoIndex, text: str,
                 pairs: set[tuple[str, str]] | None = None) -> list[str]:
    """Files defining a `Class.method` (or `Class.attribute`) pair the text writes, the
    method found under that very class (`pairs`: the text's `class_pairs` if known)."""
    hits: dict[str, int] = defaultdict(int)
    pairs = class_pairs(index, text) if pairs is None else pairs
    for files in _pairs_defined(index, pairs).values():
        if len(files) <= _SPECIFIC:
            for path in files:
                hits[path] += 1
    return sorted(hits, key=lambda p: (-hits[p], p))


def class_pairs(index: RepoIndex, text: str) -> set[tuple[str, str]]:
    """The `Class.method` pairs of `_method_pairs`: a capitalised first name (`_MockObject`
    too), a lower-case one (sympy's `log.eval`) only where the repository defines a class
    of that name, so `x.attribute` is not one."""
    pairs = _method_pairs(text)
    lower = {a for a, _ in pairs if not _capitalised(a)}
    classes = set(_class_files(index, lower)) if lower else set()
    return {(a, b) for a, b in pairs if _capitalised(a) or a in classes}


def _pairs_defined(index: RepoIndex, pairs: set[tuple[str, str]]
                   ) -> dict[tuple[str, str], set[str]]:
    """The files where each of `pairs` is defined: the method under that very class."""
    if not pairs:
        return {}
    defined = index.files_defining({b for _, b in pairs})
    candidates = sorted({p for _, b in pairs for p in defined.get(b, [])})
    defs = index.definitions_in(candidates)
    files_of: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in candidates:
        for d in defs[path]:
            pair = ((d.parent or "").rpartition(".")[2], d.name)
            if pair in pairs:
                files_of[pair].add(path)
    return files_of


def _class_files(index: RepoIndex, names: set[str]) -> dict[str, set[str]]:
    """Each of `names` that the repository defines as a class, to the files defining it."""
    defined = index.files_defining(names)
    candidates = sorted({p for a in names for p in defined.get(a, [])})
    files_of: dict[str, set[str]] = defaultdict(set)
    for path, defs in index.definitions_in(candidates).items():
        for d in defs:
            if d.kind == "class" and d.name in names:
                files_of[d.name].add(path)
    return files_of


def class_files(index: RepoIndex, text: str,
                pairs: set[tuple[str, str]] | None = None) -> list[str]:
    """Files defining the class of a `Class.method` pair the text writes, whether or not the
    method is defined under it: inherited, or the fix is to add it (`Contains.as_set`).
    A lower-case class (sympy's `log`) counts only with its method there: in an issue
    text `toctree.attribute` is more often a variable than docutils' node class."""
    pairs = class_pairs(index, text) if pairs is None else pairs
    classes = {a for a, _ in pairs if _capitalised(a)}
    lower = {(a, b) for a, b in pairs if not _capitalised(a)}
    classes |= {a for a, _ in _pairs_defined(index, lower)}
    if not classes:
        return []
    files_of = _class_files(index, classes)
    out: dict[str, None] = {}
    for name in sorted(files_of):
        if len(files_of[name]) <= _SPECIFIC:
            out.update(dict.fromkeys(sorted(files_of[name])))
    return list(out)


_TEST_STEM = re.compile(r"^test_(.+)$|^(.+?)(?:_tests?|\.test|\.spec)$")


def path_stem(path: str) -> str:
    """A file's name without its extension, its package's name for an `__init__`."""
    folder, _, name = path.rpartition("/")
    stem = name.rpartition(".")[0] or name
    return folder.rpartition("/")[2] if stem == "__init__" and folder else stem


def _stem_keys(path: str, is_test: Callable[[str], bool]) -> list[str]:
    """A non-test file's stem (a package's name for its `__init__`), and each prefix of it
    that ends in `_`: `cse_main` is also found as `cse_` (what `test_cse.py` tests when
    there is no `cse.py`)."""
    if is_test(path) or "." not in path.rsplit("/", 1)[-1]:
        return []
    stem = path_stem(path)
    return [stem, *(stem[:i + 1] for i, c in enumerate(stem) if c == "_" and i)]


def _stems(paths: list[str], is_test: Callable[[str], bool]) -> dict[str, list[str]]:
    """`_stem_keys` of each of `paths` to its files."""
    return grouped(paths, lambda p: _stem_keys(p, is_test))


def source_files(stems: dict[str, list[str]], test: str) -> list[str]:
    """The modules a test file tests, by name (`tests/test_cse.py` tests `cse.py`, else
    `cse_*.py`), the ones nearest to the test; none when the name is ambiguous."""
    folder, _, name = test.rpartition("/")
    stem, _, ext = name.rpartition(".")
    m = _TEST_STEM.match(stem)
    if m is None:
        return []
    tested = m.group(1) or m.group(2)
    found = [p for p in stems.get(tested, []) if p.endswith(f".{ext}")]
    if not found:
        found = [p for p in stems.get(f"{tested}_", []) if p.endswith(f".{ext}")]
    if not found:
        return []
    parts = folder.split("/")

    def shared(p: str) -> int:
        n = 0
        for a, b in zip(parts, p.split("/"), strict=False):
            if a != b:
                break
            n += 1
        return n

    nearest = max(shared(p) for p in found)
    out = [p for p in found if shared(p) == nearest]
    return out if len(out) <= 2 else []


def tested_sources(index: RepoIndex, tests: list[str],
                   is_test: Callable[[str], bool]) -> dict[str, list[str]]:
    """`source_files` of each of `tests` that has some."""
    stems = index.path_table(f"file_stems:{is_test.__module__}.{is_test.__qualname__}",
                             functools.partial(_stem_keys, is_test=is_test))
    out = {t: source_files(stems, t) for t in tests}
    return {t: s for t, s in out.items() if s}
