"""The ladder itself: try each level from strict to lenient and apply the first that matches."""

from __future__ import annotations

from codeloop.edit.errors import BadReplacement, NoMatch
from codeloop.edit.indent import check_new_indent
from codeloop.edit.matching.base import LEVELS, Edit, EditResult
from codeloop.edit.matching.blank_lines import blank_lines
from codeloop.edit.matching.choose import choose
from codeloop.edit.matching.document import Document, split_lines
from codeloop.edit.matching.elision import elision
from codeloop.edit.matching.exact import choose_hit, line_hits, replace_substring, splice
from codeloop.edit.matching.fuzzy import closest_region, fuzzy
from codeloop.edit.matching.patch import apply_all, apply_one
from codeloop.edit.matching.windows import Finder, positional
from codeloop.edit.normalize import identity, key_fold, key_rstrip, key_strip, style_fix
from codeloop.edit.textfile import normalize_newlines

FINDERS: dict[str, Finder] = {
    "exact": positional("exact", identity),
    "trailing_whitespace": positional("trailing_whitespace", key_rstrip),
    "indentation": positional("indentation", key_strip),
    "unicode": positional("unicode", key_fold),
    "blank_lines": blank_lines,
    "elision": elision,
    "fuzzy": fuzzy,
}


def apply_edit(text: str, edit: Edit, path: str = "the file") -> EditResult:
    """Apply one edit to `text`; raise NoMatch, AmbiguousMatch or BadReplacement."""
    search, replace = normalize_newlines(edit.search), normalize_newlines(edit.replace)
    if not search or (not search.strip() and not text.strip()):
        if not text.strip():
            return EditResult(replace, "exact", 1, 0, len(split_lines(replace)))
        raise BadReplacement(
            f"the search text is empty but {path} already has content",
            "give the lines to replace as the search text, or use write_file to rewrite the file",
        )
    S, R = split_lines(search), split_lines(replace)
    first = 0
    if not edit.whole_lines:
        style = style_fix(text, R)
        if style is not identity:
            replace = "\n".join(style(r) for r in replace.split("\n"))
            R = split_lines(replace)
        done = replace_substring(text, search, replace, edit, path)
        if done is not None:
            # The first line may continue a line of the file, so its indentation is not its own.
            old = set(S)
            new = [j for j, r in enumerate(R) if j and r not in old]
            check_new_indent(lambda: text.split("\n"), R, new, path)
            return done
        first = 1
    elif not edit.replace_all:
        style = style_fix(text, R)
        if style is not identity:
            R = [style(r) for r in R]
        hits = line_hits(text, S)
        if hits:
            old = set(S)
            check_new_indent(lambda: text.split("\n"), R, [j for j, r in enumerate(R) if r not in old],
                             path)
            at = hits[0] if len(hits) == 1 else choose_hit(text, hits, S, edit, path)
            return splice(text, at, S, R)
        first = 1
    doc = Document(text)
    for level in LEVELS[first:]:
        if level == "fuzzy":
            # Before guessing approximately, check whether the edit was made already: an
            # inserted line makes the old text "similar" to the new, and fuzzy would insert twice.
            again = _already_applied(doc, S, R)
            if again is not None:
                return EditResult(text, "already_applied", again + 1, 0, 0, already_applied=True)
        if _same_as_previous(level, doc, S):
            continue
        cands = FINDERS[level](doc, S, R)
        if not cands:
            continue
        if edit.replace_all:
            return apply_all(doc, cands, S, R, level, path)
        chosen = choose(doc, cands, edit, level, path)
        return apply_one(doc, chosen, S, R, level, path)
    raise NoMatch(f"the search text was not found in {path}. {closest_region(doc, S)}",
                  "copy the lines to change exactly as the file has them, with a few lines of context")


def _same_as_previous(level: str, doc: Document, S: list[str]) -> bool:
    """Whether `level` cannot find anything the level before it did not (a cheap skip)."""
    return level == "unicode" and doc.ascii and all(s.isascii() for s in S)


def _already_applied(doc: Document, S: list[str], R: list[str]) -> int | None:
    """The line where the replacement already stands, if it stands in exactly one place."""
    if not any(r.strip() for r in R) or [key_fold(s) for s in S] == [key_fold(r) for r in R]:
        return None
    for level in LEVELS[:LEVELS.index("blank_lines") + 1]:
        cands = FINDERS[level](doc, R, R)
        if cands:
            return cands[0].start if len(cands) == 1 else None
    return None
