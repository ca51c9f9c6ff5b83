"""What a task's text points at in a repository: files it names, identifiers the repository
defines, and path components (`autodoc`, `linkcheck`, `L060`) that name files or folders."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from codeloop.index.languages import PROSE_LANGUAGES, detect_language
from codeloop.index.service import RepoIndex

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PATHLIKE = re.compile(r"[A-Za-z0-9_.\-/]+\.[A-Za-z]{1,5}\b|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*){1,}")
_WORD = re.compile(r"[A-Za-z_]\w*")
_SPECIFIC_FILES = 4  # an identifier defined in more files than this says little...
_SPECIFIC_CODE_FILES = 8  # ...unless the text uses it as code
_PROSE_WEIGHT = 0.3

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
_ATTRIBUTE = re.compile(r"\.([A-Za-z_]\w*)")
_TRACEBACK_FRAME = re.compile(r'File "[^"]+", line \d+, in (\w+)')
_CODE_LINE_PREFIXES = (">>>", "In [", "...", "$ ")

# Bug-report templates paste the reporter's environment (`xr.show_versions()`, `pip
# freeze`): dozens of package names that match version-reporting code, not the bug.
_REPORT_START = re.compile(r"^\s*(#+\s*)?INSTALLED VERSIONS\s*$", re.M)
_DETAILS = re.compile(r"<details>.*?(?:</details>|\Z)", re.S)
_PIN_LINE = re.compile(r"^\s*[\w.\-\[\]]+\s*(==|: )\s*[\w.+\-]*\d[\w.+\-]*\s*$")

_PATH_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_GENERIC_COMPONENTS = frozenset({"src", "lib", "core", "utils", "util", "base", "main",
                                 "common", "tests", "test", "__init__"})


@dataclass
class Focus:
    """What a text points at: files it names and identifiers the repository defines."""

    files: dict[str, float] = field(default_factory=dict)
    identifiers: set[str] = field(default_factory=set)


@lru_cache(maxsize=32)
def without_reports(text: str) -> str:
    """`text` without pasted environment reports: version dumps and lines of pins (cached:
    the context builder, the ranker and the focus each clean the same task text)."""
    text = _DETAILS.sub(lambda m: "" if _is_report(m.group(0)) else m.group(0), text)
    start = _REPORT_START.search(text)
    if start is not None:
        text = text[:start.start()]
    return "\n".join(line for line in text.splitlines() if not _PIN_LINE.match(line))


def _is_report(block: str) -> bool:
    if "INSTALLED VERSIONS" in block or "show_versions" in block:
        return True
    lines = [line for line in block.splitlines() if line.strip()]
    return len(lines) >= 5 and sum(bool(_PIN_LINE.match(line)) for line in lines) > len(lines) / 2


def code_words(text: str) -> set[str]:
    """Words the text uses as code: in code blocks and spans, calls, attributes, tracebacks."""
    out: set[str] = set()
    for block in _FENCE.findall(text):
        out.update(_WORD.findall(block))
    for span in _INLINE_CODE.findall(text):
        out.update(_WORD.findall(span))
    for line in text.splitlines():
        if line.lstrip().startswith(_CODE_LINE_PREFIXES) or line.startswith("    "):
            out.update(_WORD.findall(line))
    out.update(_CALL.findall(text))
    out.update(_ATTRIBUTE.findall(text))
    out.update(_TRACEBACK_FRAME.findall(text))
    return out


def code_like(word: str) -> bool:
    """Whether a word reads as an identifier rather than English (`snake_case`, `camelCase`,
    a capitalised name longer than three letters)."""
    return "_" in word or any(c.isupper() for c in word[1:]) or (word[:1].isupper() and
                                                                  len(word) > 3)


def _suffix_keys(path: str) -> list[str]:
    """Every suffix of `path`, and its dotted module name (`pkg.mod`, `pkg` for an
    `__init__`): a path written in a text names the files listed under it."""
    parts = path.split("/")
    keys = ["/".join(parts[i:]) for i in range(len(parts))]
    if path.endswith(".py"):
        dotted = path[:-3].replace("/", ".")
        keys += [dotted, dotted.removesuffix(".__init__")]
    return keys


def _path_mentions(text: str, by_suffix: dict[str, list[str]]) -> dict[str, float]:
    found: dict[str, float] = {}
    for m in _PATHLIKE.findall(text):
        m = m.strip("./")
        hits = by_suffix.get(m)
        if hits and len(hits) <= _SPECIFIC_FILES:
            for p in hits:
                found[p] = max(found.get(p, 0.0), 1.0 / len(hits))
    return found


def focus_of(index: RepoIndex, text: str) -> Focus:
    """Files and identifiers `text` mentions that exist in the repository."""
    text = without_reports(text)
    suffixes = index.path_table("path_suffixes", _suffix_keys)
    focus = Focus(files=_path_mentions(text, suffixes))
    words: set[str] = set()
    for token in _IDENT.findall(text):
        for part in token.split("."):
            if len(part) >= 3:
                words.add(part)
    as_code = code_words(text)
    defined = index.files_defining(words)
    for word, files in defined.items():
        if not files:
            continue
        focus.identifiers.add(word)
        code = code_like(word) or word in as_code
        if len(files) > (_SPECIFIC_CODE_FILES if word in as_code else _SPECIFIC_FILES):
            continue
        weight = (1.0 if code else _PROSE_WEIGHT) / len(files)
        for p in files:
            focus.files[p] = focus.files.get(p, 0.0) + weight
    return focus


def _component_keys(path: str) -> set[str]:
    """The folder and file-stem names (lower case) of a code file."""
    if detect_language(path) in PROSE_LANGUAGES:
        return set()
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return {part for part in {c.lower() for c in stem.split("/")}
            if len(part) >= 3 and part not in _GENERIC_COMPONENTS}


def path_term_files(index: RepoIndex, text: str) -> list[str]:
    """Code files under folders or with stems the text names as words, rarest names first
    (each name weighs its inverse document frequency over the repository's code files)."""
    components = index.path_table("path_components", _component_keys)
    total = max(len(index.paths()), 1)
    words = {w.lower() for w in _PATH_WORD.findall(text)}
    score: dict[str, float] = defaultdict(float)
    for word in words:
        files = components.get(word)
        if files:
            weight = math.log(total / len(files))
            for p in files:
                score[p] += weight
    return sorted((p for p in score if score[p] > 0), key=lambda p: (-score[p], p))
