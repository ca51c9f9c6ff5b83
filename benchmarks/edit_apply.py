"""Benchmark: apply real edits (SWE-bench gold hunks), perturbed the ways models err.

Each gold hunk becomes a case per format (edit_file, SEARCH/REPLACE, unified diff, patch
envelope) and per perturbation. The expected file is what `git apply` of the gold hunk
produces. Outcomes: correct (the result equals it byte for byte, so a difference in
whitespace alone is wrong), refused, wrong. A case is ambiguous when its search text,
under the normalisation its perturbation needs, fits several places and no line number or
anchor picks one, or when a lost blank line leaves the edit meaning several files (see
edit_ws_perturb.py) -- those must be refused. Aider's and OpenHands' editors run the
SEARCH/REPLACE cases in their own venvs for comparison.

    PYTHONPATH=src python benchmarks/edit_apply.py [--limit N] [--no-peers] [--only P,...]
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import unidiff

from codeloop.edit.apply import FileOp, plan
from codeloop.edit.errors import EditError
from codeloop.edit.formats import parse_patch
from codeloop.edit.matching import Edit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from edit_ws_perturb import blank_readings, drop_blank_in_run, two_space
from peer_venvs import venv_python

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
        loaded: tuple[list[Hunk], Counter[str]] = pickle.loads(cache.read_bytes())
        return loaded
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


def _sides(body: Body) -> tuple[str, str]:
    old = [t for k, t in body if k != "+"]
    new = [t for k, t in body if k != "-"]
    return "\n".join(old) + "\n" if old else "", "\n".join(new) + "\n" if new else ""


def _shift(h: Hunk) -> int:
    return 20 + zlib.crc32(h.file_id.encode() + str(h.start).encode()) % 60


def ops_for(case: Case) -> list[FileOp]:
    old, new = _sides(case.body)
    if case.fmt == "edit_file":
        return [FileOp(PATH, "update", (Edit(old.removesuffix("\n"), new.removesuffix("\n"),
                                             whole_lines=False),))]
    return parse_patch(render(case))


def render(case: Case) -> str:
    old, new = _sides(case.body)
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


# --- running -----------------------------------------------------------------------------


def run_ours(cases: list[Case], repeat: int = 1) -> None:
    """Apply every case; its latency is the fastest of `repeat` runs (load on a shared
    machine only ever adds time)."""
    for case in cases:
        data = ("\n".join(case.hunk.base) + ("\n" if case.hunk.trailing_nl else "")).encode()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            try:
                changes = plan(ops_for(case), lambda _p, d=data: d)  # type: ignore[misc]
            except EditError:
                changes = None
            times.append((time.perf_counter() - start) * 1000)
        case.ms = min(times)
        if changes is None:
            case.outcome = "refused"
        else:
            # Byte for byte: whitespace the engine changed uninvited makes a result wrong.
            after = changes[0].after if changes else data
            case.outcome = "correct" if after == case.hunk.expected.encode() else "wrong"


def run_peer(peer: str, cases: list[Case]) -> None:
    python = venv_python(peer)
    sr = [c for c in cases if c.fmt == "search_replace"]
    files: dict[str, str] = {}
    jobs = []
    for c in sr:
        files.setdefault(c.hunk.file_id, "\n".join(c.hunk.base) + ("\n" if c.hunk.trailing_nl else ""))
        old, new = _sides(c.body)
        jobs.append([c.hunk.file_id, old, new])
    worker = Path(__file__).resolve().parent / "edit_peer_worker.py"
    done = subprocess.run([str(python), str(worker)], input=json.dumps(
        {"peer": peer, "files": files, "cases": jobs}), capture_output=True, text=True, check=True)
    for c, (status, digest, _ms) in zip(sr, json.loads(done.stdout), strict=True):
        if status == "refused":
            c.peers[peer] = "refused"
        else:
            ok = digest == hashlib.sha256(c.hunk.expected.encode()).hexdigest()
            c.peers[peer] = "correct" if ok else "wrong"


def diff500_ms(hunks: list[Hunk], lines: int = 2000) -> tuple[float, int]:
    """Apply one generated unified diff of about 500 lines to a base file of about `lines` lines.

    Returns the fastest of 9 runs (as for case latency: load only adds time) and the file's
    line count.
    """
    big = [h.base for h in hunks if len(h.base) >= lines]
    base = min(big, key=len) if big else max((h.base for h in hunks), key=len)
    every = 2
    while True:
        changed = [x + "  # edited" if i % every == 0 and x.strip() else x for i, x in enumerate(base)]
        diff = list(difflib.unified_diff([x + "\n" for x in base], [x + "\n" for x in changed],
                                         f"a/{PATH}", f"b/{PATH}"))
        if len(diff) <= 520 or every > len(base):
            break
        every += 1
    patch = "".join(diff)
    data = ("\n".join(base) + "\n").encode()
    times = []
    for _ in range(9):
        t0 = time.perf_counter()
        plan(parse_patch(patch), lambda _p: data)
        times.append((time.perf_counter() - t0) * 1000)
    return min(times), len(base)


# --- reporting ---------------------------------------------------------------------------


def _pct(n: int, d: int) -> float:
    return round(100.0 * n / d, 2) if d else 0.0


def report(cases: list[Case], peers: list[str]) -> dict[str, object]:
    rows: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for c in cases:
        for key in ((c.fmt, c.pert), (c.fmt, "ALL"), ("ALL", c.pert)):
            r = rows[key]
            r["cases"] += 1
            if c.ambiguous:
                r["ambiguous"] += 1
                r["guessed" if c.outcome != "refused" else "amb_refused"] += 1
                if c.outcome == "wrong":
                    r["wrong"] += 1
            else:
                r[c.outcome] += 1
            for p, o in c.peers.items():
                if not c.ambiguous:
                    r[f"{p}_{o}"] += 1
                elif o == "wrong":
                    r[f"{p}_wrong"] += 1
    head = f"{'format':<15}{'perturbation':<20}{'cases':>7}{'ambig':>7}{'correct%':>10}{'refused':>9}{'wrong':>7}{'guessed':>9}"
    head += "".join(f"{p + '%':>12}{p[:5] + '-wr':>10}" for p in peers)
    print(head)
    for fmt in (*FORMATS, "ALL"):
        for pert in (*PERTURBATIONS, "ALL"):
            r = rows.get((fmt, pert))
            if not r:
                continue
            unamb = r["cases"] - r["ambiguous"]
            line = (f"{fmt:<15}{pert:<20}{r['cases']:>7}{r['ambiguous']:>7}"
                    f"{_pct(r['correct'], unamb):>10.2f}{r['refused']:>9}{r['wrong']:>7}{r['guessed']:>9}")
            if fmt == "search_replace":
                line += "".join(f"{_pct(r[p + '_correct'], unamb):>12.2f}{r[p + '_wrong']:>10}" for p in peers)
            print(line)
        print()
    unamb = [c for c in cases if not c.ambiguous]
    ws = [c for c in unamb if c.pert in WHITESPACE]
    times = sorted(c.ms for c in cases)
    peer_out = {}
    sr = [c for c in unamb if c.fmt == "search_replace"]
    for p in peers:
        peer_out[p] = {
            "correct_pct": _pct(sum(c.peers.get(p) == "correct" for c in sr), len(sr)),
            "wrong": sum(c.peers.get(p) == "wrong" for c in cases if c.fmt == "search_replace"),
        }
    ours_sr = _pct(sum(c.outcome == "correct" for c in sr), len(sr))
    print(f"SEARCH/REPLACE, unambiguous: codeloop {ours_sr}% correct; "
          + "; ".join(f"{p} {v['correct_pct']}% correct, {v['wrong']} wrong" for p, v in peer_out.items()))
    by_pert = {pert: {k: rows[("ALL", pert)][k]
                      for k in ("cases", "ambiguous", "correct", "refused", "wrong", "guessed")}
               for pert in PERTURBATIONS if ("ALL", pert) in rows}
    return {
        "cases": len(cases),
        "ambiguous": len(cases) - len(unamb),
        "correct_pct": _pct(sum(c.outcome == "correct" for c in unamb), len(unamb)),
        "correct_pct_exact_ws": _pct(sum(c.outcome == "correct" for c in ws), len(ws)),
        "wrong": sum(c.outcome == "wrong" for c in cases),
        "guessed": sum(c.ambiguous and c.outcome != "refused" for c in cases),
        "apply_p50_ms": round(statistics.median(times), 3) if times else 0.0,
        "apply_p95_ms": round(times[int(0.95 * (len(times) - 1))], 3) if times else 0.0,
        "peers": peer_out,
        "perturbations": by_pert,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=Path, required=True, help="SWE-bench instances JSONL")
    ap.add_argument("--mirrors", type=Path, required=True, help="bare mirrors, OWNER+NAME/repo")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N instances")
    ap.add_argument("--no-peers", action="store_true", help="skip Aider and OpenHands")
    ap.add_argument("--show", type=int, default=0, help="print up to N failing cases")
    ap.add_argument("--repeat", type=int, default=2, help="time each case this many times (min)")
    ap.add_argument("--only", default="", help="comma-separated perturbations to run (default all)")
    args = ap.parse_args()
    if not args.instances.is_file():
        ap.error(f"--instances {args.instances}: no such file")
    if not args.mirrors.is_dir():
        ap.error(f"--mirrors {args.mirrors}: no such directory")
    perts = tuple(args.only.split(",")) if args.only else PERTURBATIONS
    if unknown := set(perts) - set(PERTURBATIONS):
        ap.error(f"unknown perturbations: {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    hunks, skipped = cached_hunks(args.instances, args.mirrors, args.limit)
    cases = build_cases(hunks, perts)
    print(f"{len(hunks)} hunks, {len(cases)} cases ({time.perf_counter() - t0:.1f}s to build); "
          f"skipped: {dict(skipped)}", flush=True)
    run_ours(cases, args.repeat)
    peers = [] if args.no_peers else ["aider", "openhands"]
    for p in peers:
        run_peer(p, cases)
    shown = 0
    for c in cases:
        bad = c.outcome == "wrong" or (c.ambiguous and c.outcome != "refused") or (
            not c.ambiguous and c.outcome == "refused")
        if bad and shown < args.show:
            shown += 1
            print(f"--- {c.outcome} amb={c.ambiguous} {c.fmt}/{c.pert} {c.hunk.file_id}@{c.hunk.start}")
            print(render(c) if c.fmt != "edit_file" else _sides(c.body)[0])
    summary = report(cases, peers)
    d500, d500_lines = diff500_ms(hunks) if hunks else (0.0, 0)
    summary["diff500_ms"] = round(d500, 3)
    print(f"apply p50 {summary['apply_p50_ms']} ms, p95 {summary['apply_p95_ms']} ms; "
          f"500-line diff on a {d500_lines}-line file {summary['diff500_ms']} ms")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
