"""The edit benchmark's cases: SWE-bench gold hunks, perturbed the ways models err, each
rendered in every edit format, with an oracle of which are ambiguous (`edit_apply.py` runs
and reports them)."""

from __future__ import annotations

import hashlib
import json
import pickle
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import unidiff

from codeloop.edit.apply import FileOp
from codeloop.edit.formats import parse_patch
from codeloop.edit.matching import Edit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from edit_ws_perturb import blank_readings, drop_blank_in_run, two_space

FORMATS = ("edit_file", "search_replace", "unified", "envelope")
PERTURBATIONS = (
    "exact", "trimmed_context", "extra_context", "dedent", "overindent", "tabs_spaces",
    "trailing_ws", "curly_quotes", "elision", "wrong_line_numbers",
    "no_line_numbers", "missing_blank_line", "blank_run", "two_space",
)
WHITESPACE = {"exact", "dedent", "overindent", "tabs_spaces", "trailing_ws",
              "missing_blank_line", "blank_run", "two_space"}
LINE_NUMBER_ONLY = {"wrong_line_numbers", "no_line_numbers"}
PATH = "target.py"
Body = list[tuple[str, str]]  # (" " | "-" | "+", text)


@dataclass
class Hunk:
    file_id: str
    base: list[str]
    trailing_nl: bool
    expected: str
    body: Body
    start: int  # 1-based first old line
    section: str


@dataclass
class Case:
    hunk: Hunk
    fmt: str
    pert: str
    body: Body
    start: int
    ambiguous: bool
    outcome: str = ""
    ms: float = 0.0
    peers: dict[str, str] = field(default_factory=dict)


# --- loading gold hunks ----------------------------------------------------------------


def _git(mirror: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], input=data,
                          capture_output=True, check=True).stdout


def load_hunks(instances: Path, mirrors: Path, limit: int | None) -> tuple[list[Hunk], Counter[str]]:
    skipped: Counter[str] = Counter()
    hunks: list[Hunk] = []
    rows = [json.loads(x) for x in instances.read_text().splitlines() if x.strip()]
    for row in rows[:limit] if limit else rows:
        mirror = mirrors / row["repo"].replace("/", "+") / "repo"
        if not mirror.exists():
            skipped["repository not mirrored"] += 1
            continue
        for pfile in unidiff.PatchSet(row["patch"]):
            if pfile.is_added_file or pfile.is_removed_file or pfile.is_binary_file:
                skipped["file added/removed"] += 1
                continue
            try:
                raw = _git(mirror, "show", f"{row['base_commit']}:{pfile.source_file[2:]}")
                text = raw.decode("utf-8")
            except (subprocess.CalledProcessError, UnicodeDecodeError):
                skipped["base file unreadable"] += 1
                continue
            if "\r" in text:
                skipped["file has CR line endings"] += 1
                continue
            hunks.extend(_file_hunks(row["instance_id"], pfile, text, skipped))
    return hunks, skipped


def _git_apply(text: str, patch: str) -> str | None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, PATH).write_text(text)
        Path(tmp, "p.diff").write_text(patch)
        done = subprocess.run(["git", "apply", "p.diff"], cwd=tmp, capture_output=True)
        return Path(tmp, PATH).read_text() if done.returncode == 0 else None


def _file_hunks(iid: str, pfile: unidiff.PatchedFile, text: str, skipped: Counter[str]) -> list[Hunk]:
    header = f"--- a/{PATH}\n+++ b/{PATH}\n"
    trailing = text.endswith("\n")
    base = (text[:-1] if trailing else text).split("\n")
    out = []
    for h in pfile:
        body = [(ln.line_type, ln.value.rstrip("\n")) for ln in h if ln.line_type in " -+"]
        expected = _git_apply(text, header + str(h))
        old = [t for k, t in body if k != "+"]
        if expected is None or base[h.source_start - 1:h.source_start - 1 + len(old)] != old:
            skipped["gold hunk does not apply alone"] += 1
            continue
        new = [t for k, t in body if k != "-"]
        at = h.source_start - 1
        spliced = base[:at] + new + base[at + len(old):]
        if "\n".join(spliced) + ("\n" if trailing else "") != expected:
            # git placed a hunk whose context occurs twice away from its header's line
            skipped["git apply placed the hunk away from its line number"] += 1
            continue
        out.append(Hunk(f"{iid}:{pfile.path}", base, trailing, expected, body,
                        h.source_start, h.section_header.strip()))
    return out


def cached_hunks(instances: Path, mirrors: Path, limit: int | None) -> tuple[list[Hunk], Counter[str]]:
    """Gold hunks with their expected files, cached under benchmarks/.cache between runs."""
    key = hashlib.sha256(instances.read_bytes() + f"{mirrors}|{limit}".encode()).hexdigest()[:16]
    cache = Path(__file__).resolve().parent / ".cache" / f"edit_hunks_{key}.pickle"
    if cache.exists():
        try:
            loaded: tuple[list[Hunk], Counter[str]] = pickle.loads(cache.read_bytes())
            return loaded
        except (AttributeError, pickle.UnpicklingError):  # written when Hunk lived elsewhere
            pass
    result = load_hunks(instances, mirrors, limit)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(result))
    return result


# --- perturbations -----------------------------------------------------------------------

CURLY = str.maketrans({"'": "’"})


def _lead(s: str) -> str:
    return s[: len(s) - len(s.lstrip())]


def _map_text(body: Body, fn) -> Body:  # type: ignore[no-untyped-def]
    return [(k, fn(t)) for k, t in body]


def _uses_tabs(base: list[str]) -> bool:
    tabs = sum(1 for x in base if x.startswith("\t"))
    return tabs > sum(1 for x in base if x.startswith("    "))


def perturb(h: Hunk, pert: str) -> tuple[Body, int] | None:
    """The perturbed hunk body and its old start line, or None when it does not apply."""
    body, start = list(h.body), h.start
    texts = [t for _, t in body if t.strip()]
    if pert in ("exact", "wrong_line_numbers", "no_line_numbers"):
        return body, start
    if pert == "trimmed_context":
        lead = next(i for i, (k, _) in enumerate(body) if k != " ") if any(k != " " for k, _ in body) else 0
        tail = next(i for i, (k, _) in enumerate(reversed(body)) if k != " ")
        if lead <= 1 and tail <= 1:
            return None
        cut_top = max(0, lead - 1)
        return body[cut_top:len(body) - max(0, tail - 1)], start + cut_top
    if pert == "extra_context":
        old_len = sum(1 for k, _ in body if k != "+")
        above = h.base[max(0, start - 4):start - 1]
        below = h.base[start - 1 + old_len:start - 1 + old_len + 3]
        if not above and not below:
            return None
        return [(" ", t) for t in above] + body + [(" ", t) for t in below], start - len(above)
    if pert == "dedent":
        common = min((len(_lead(t)) for t in texts), default=0)
        if common == 0 or len({_lead(t)[:common] for t in texts}) != 1:
            return None
        return _map_text(body, lambda t: t[common:] if t.strip() else t), start
    if pert == "overindent":
        pad = "\t" if _uses_tabs(h.base) else "    "
        return _map_text(body, lambda t: pad + t if t.strip() else t), start
    if pert == "tabs_spaces":
        if _uses_tabs(h.base):
            if not any(t.startswith("\t") for t in texts):
                return None
            return _map_text(body, lambda t: _lead(t).replace("\t", "    ") + t.lstrip()), start
        if not any(t.startswith("    ") for t in texts):
            return None
        return _map_text(body, lambda t: _lead(t).replace("    ", "\t") + t.lstrip()), start
    if pert == "trailing_ws":
        return [(k, t + "  " if i % 2 else t) for i, (k, t) in enumerate(body)], start
    if pert == "curly_quotes":
        if not any("'" in t or '"' in t for k, t in body if k != "+"):
            return None
        return _map_text(body, _curly), start
    if pert == "elision":
        return _elide(body, start)
    if pert == "missing_blank_line":
        at = _lost_blank(body)
        if at is None:
            return None
        return body[:at] + body[at + 1:], start + (1 if at == 0 else 0)
    if pert == "blank_run":
        dropped = drop_blank_in_run(body, f"{h.file_id}:{h.start}")
        if dropped is None:
            return None
        seen, d = dropped
        return seen, start + (0 if any(k != "+" for k, _ in body[:d]) else 1)
    if pert == "two_space":
        if _uses_tabs(h.base):
            return None
        made = two_space(body)
        return (made, start) if made is not None else None
    raise ValueError(pert)


def _lost_blank(body: Body) -> int | None:
    """A blank context line to drop: one whose whole run of blank lines is context between
    context lines. Next to a change, blank lines are interchangeable and which one the model
    lost (so where the change goes) is not recoverable from the edit."""
    i = 0
    while i < len(body):
        if body[i][1].strip():
            i += 1
            continue
        j = i
        while j < len(body) and not body[j][1].strip():
            j += 1
        edges = [body[x][0] for x in (i - 1, j) if 0 <= x < len(body)]
        if all(k == " " for k, _ in body[i:j]) and all(k == " " for k in edges):
            return i
        i = j
    return None


def _curly(text: str) -> str:
    out, opened = [], False
    for c in text:
        if c == '"':
            out.append("”" if opened else "“")
            opened = not opened
        else:
            out.append(c)
    return "".join(out).translate(CURLY)


def _elide(body: Body, start: int) -> tuple[Body, int] | None:
    """Replace the longest run (>= 2) of context lines between two changes with '...'."""
    best: tuple[int, int] | None = None
    i = 0
    while i < len(body):
        if body[i][0] != " ":
            i += 1
            continue
        j = i
        while j < len(body) and body[j][0] == " ":
            j += 1
        if i > 0 and j < len(body) and j - i >= 2 and (best is None or j - i > best[1] - best[0]):
            best = (i, j)
        i = j
    if best is None:
        return None
    i, j = best
    marker = _lead(next((t for _, t in body[i:j] if t.strip()), "")) + "..."
    return [*body[:i], (" ", marker), *body[j:]], start


# --- the ambiguity oracle: independent of the engine ------------------------------------


def _norm_for(pert: str):  # type: ignore[no-untyped-def]
    if pert == "trailing_ws":
        return str.rstrip
    if pert in ("dedent", "overindent", "tabs_spaces", "two_space"):
        return str.strip
    if pert == "curly_quotes":
        return lambda s: s.replace("“", '"').replace("”", '"').replace("’", "'")
    return lambda s: s


def _places(base: list[str], search: list[str], norm, nonblank: bool = False) -> list[int]:  # type: ignore[no-untyped-def]
    rows = [i for i, x in enumerate(base) if x.strip()] if nonblank else list(range(len(base)))
    keys = [norm(base[i]) for i in rows]
    want = [norm(s) for s in search if s.strip() or not nonblank]
    if not want:
        return []
    first = want[0]
    return [rows[p] for p in range(len(keys) - len(want) + 1)
            if keys[p] == first and keys[p:p + len(want)] == want]


def oracle_places(case: Case) -> list[int]:
    h, pert = case.hunk, case.pert
    old = [t for k, t in case.body if k != "+"]
    if case.fmt == "edit_file" and pert in ("exact", "trimmed_context", "extra_context"):
        text = "\n".join(h.base) + "\n"
        needle, out, at = "\n".join(old), [], -1
        while (at := text.find(needle, at + 1)) != -1:
            out.append(text.count("\n", 0, at))
        return out
    if pert == "elision":
        mark = next(i for i, t in enumerate(old) if t.strip() == "...")
        a = _places(h.base, old[:mark], lambda s: s)
        b = _places(h.base, old[mark + 1:], lambda s: s)
        return [x for x in a for y in b if y >= x + mark]
    if pert in ("missing_blank_line", "blank_run"):
        return _places(h.base, old, lambda s: s, nonblank=True)
    return _places(h.base, old, _norm_for(pert))


def is_ambiguous(case: Case) -> bool:
    if case.pert in ("missing_blank_line", "blank_run") and \
            len(blank_readings(case.hunk.body, case.body)) > 1:
        return True  # the edit can mean several files: which blank line it lost matters
    places = oracle_places(case)
    if len(places) <= 1:
        return False
    if case.fmt == "unified" and case.pert not in LINE_NUMBER_ONLY:
        return False  # its (correct) line number says which
    if case.fmt in ("unified", "envelope") and case.hunk.section:
        anchor = case.hunk.section.strip()
        at = next((i for i, x in enumerate(case.hunk.base) if x.strip().startswith(anchor)), None)
        span = sum(1 for k, _ in case.body if k != "+")
        if at is not None and sum(1 for p in places if p + span > at) == 1:
            return False
    return True


# --- rendering one case in each format ----------------------------------------------------


def sides(body: Body) -> tuple[str, str]:
    old = [t for k, t in body if k != "+"]
    new = [t for k, t in body if k != "-"]
    return "\n".join(old) + "\n" if old else "", "\n".join(new) + "\n" if new else ""


def _shift(h: Hunk) -> int:
    return 20 + zlib.crc32(h.file_id.encode() + str(h.start).encode()) % 60


def ops_for(case: Case) -> list[FileOp]:
    old, new = sides(case.body)
    if case.fmt == "edit_file":
        return [FileOp(PATH, "update", (Edit(old.removesuffix("\n"), new.removesuffix("\n"),
                                             whole_lines=False),))]
    return parse_patch(render(case))


def render(case: Case) -> str:
    old, new = sides(case.body)
    body = "".join(f"{k}{t}\n" for k, t in case.body)
    if case.fmt == "search_replace":
        return f"{PATH}\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n"
    if case.fmt == "envelope":
        anchor = f"@@ {case.hunk.section}\n" if case.hunk.section else "@@\n"
        return f"*** Begin Patch\n*** Update File: {PATH}\n{anchor}{body}*** End Patch\n"
    n_old, n_new = sum(1 for k, _ in case.body if k != "+"), sum(1 for k, _ in case.body if k != "-")
    start = case.start
    if case.pert == "wrong_line_numbers":
        shift = _shift(case.hunk)
        start = start + shift if start <= shift else start - shift
    head = "@@" if case.pert == "no_line_numbers" else f"@@ -{start},{n_old} +{start},{n_new} @@"
    section = f" {case.hunk.section}" if case.hunk.section else ""
    return f"--- a/{PATH}\n+++ b/{PATH}\n{head}{section}\n{body}"


def build_cases(hunks: list[Hunk], perts: tuple[str, ...] = PERTURBATIONS) -> list[Case]:
    cases = []
    for h in hunks:
        for pert in perts:
            made = perturb(h, pert)
            if made is None:
                continue
            body, start = made
            for fmt in FORMATS:
                if pert in LINE_NUMBER_ONLY and fmt != "unified":
                    continue
                case = Case(h, fmt, pert, body, start, False)
                case.ambiguous = is_ambiguous(case)
                cases.append(case)
    return cases
