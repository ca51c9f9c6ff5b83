"""`find_symbol`'s resolution of what a model asks for: `name`, `Class.method`, `mod.func`.

`Class.method` is looked up on the class, then on its base classes (read from the class's
signature in the symbol table, breadth first, so an inherited method is found where it is
defined), then by the bare name on any class or module. When nothing matches, the closest
defined names are suggested (rapidfuzz).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from codeloop.index.hits import SymbolHit
from codeloop.index.service import RepoIndex

MAX_BASES = 50  # classes visited up a hierarchy; deep framework trees stop here
SUGGESTIONS = 5
_SUGGEST_CUTOFF = 70.0
_CLASS_KINDS = frozenset({"class", "interface", "struct", "trait"})
# `class Name(Base, pkg.Mixin, metaclass=M):` (Python), `extends A implements B, C` (others)
_PAREN_BASES = re.compile(r"^\s*class\s+\w+\s*(?:\[[^\]]*\])?\s*\((.*)\)\s*:?\s*$", re.S)
_EXTENDS = re.compile(r"\b(?:extends|implements)\s+([\w.$<>,\s]+?)(?=\{|$|\bimplements\b)")
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


@dataclass
class SymbolLookup:
    """The definitions found for a name, and how: "exact", "inherited" (with the class that
    defines it), "bare" (the method or function by its own name, elsewhere), "prefix"
    (names starting with it) or "none" (with suggestions)."""

    name: str
    how: str
    hits: list[SymbolHit] = field(default_factory=list)
    inherited_from: str | None = None
    bases: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)


def bases_of(signature: str) -> list[str]:
    """The base class names a class signature names (last dotted part, in order)."""
    found = _PAREN_BASES.match(signature)
    if found is not None:
        parts = [p.strip() for p in found.group(1).split(",")]
        names = [p for p in parts if p and "=" not in p and not p.startswith("*")]
    else:
        names = [n for m in _EXTENDS.finditer(signature) for n in m.group(1).split(",")]
    out: list[str] = []
    for raw in names:
        match = _NAME.match(raw.strip())
        if match is not None:
            base = match.group(0).rpartition(".")[2]
            if base not in out and base != "object":
                out.append(base)
    return out


def _classes(index: RepoIndex) -> dict[str, list[SymbolHit]]:
    def load() -> dict[str, list[SymbolHit]]:
        out: dict[str, list[SymbolHit]] = {}
        for hits in index.definitions_in(index.paths()).values():
            for hit in hits:
                if hit.kind in _CLASS_KINDS:
                    out.setdefault(hit.name, []).append(hit)
        return out
    return index.memo("classes_by_name", load)


def _names(index: RepoIndex) -> list[str]:
    """Every defined name, bare and as `Parent.name`, for suggestions."""
    def load() -> list[str]:
        names: set[str] = set()
        for hits in index.definitions_in(index.paths()).values():
            for hit in hits:
                names.add(hit.name)
                if hit.parent:
                    names.add(f"{hit.parent}.{hit.name}")
        return sorted(names)
    return index.memo("symbol_names", load)


def ancestors(index: RepoIndex, cls: str) -> list[str]:
    """`cls`'s base classes, nearest first (breadth first over every class of that name)."""
    classes = _classes(index)
    seen = {cls}
    order: list[str] = []
    queue = deque([cls])
    while queue and len(order) < MAX_BASES:
        for definition in classes.get(queue.popleft(), []):
            for base in bases_of(definition.signature):
                if base not in seen:
                    seen.add(base)
                    order.append(base)
                    queue.append(base)
    return order


def suggest(index: RepoIndex, name: str, limit: int = SUGGESTIONS) -> list[str]:
    """Defined names close to `name` (case-insensitive fuzzy match), best first."""
    choices = _names(index)
    qualified = "." in name
    # A much shorter name matches a part of the query (`T` in `api_tokn`): not a suggestion.
    pool = [c for c in choices if ("." in c) == qualified and len(c) * 2 >= len(name)]
    found = process.extract(name, pool, scorer=fuzz.WRatio, processor=str.lower,
                            limit=limit, score_cutoff=_SUGGEST_CUTOFF)
    return [choice for choice, _score, _i in found]


def lookup(index: RepoIndex, name: str, limit: int = 20) -> SymbolLookup:
    """Resolve `name` as described in the module docstring."""
    name = name.strip().removesuffix("()")
    qualifier, _, short = name.rpartition(".")
    if not qualifier:
        hits = index.find_symbol(short, limit)
        how = "exact" if any(h.name == short for h in hits) else "prefix"
        return _or_suggest(index, SymbolLookup(name, how, hits))
    # `pkg.module.Class.method`: the class is the last part before the method.
    owner = qualifier.rpartition(".")[2]
    hits = index.find_symbol(f"{owner}.{short}", limit)
    if hits:
        return SymbolLookup(name, "exact", hits)
    found = SymbolLookup(name, "none", bases=ancestors(index, owner))
    for base in found.bases:
        hits = index.find_symbol(f"{base}.{short}", limit)
        if hits:
            found.how, found.hits, found.inherited_from = "inherited", hits, base
            return found
    bare = [h for h in index.find_symbol(short, limit * 4) if h.name == short]
    if bare:
        # A module-qualified function (`utils.parse`) first: files named like the qualifier.
        parts = set(qualifier.split("."))
        bare.sort(key=lambda h: (h.path.rpartition("/")[2].removesuffix(".py") not in parts
                                 and (h.parent or "") not in parts))
        found.how, found.hits = "bare", bare[:limit]
        return found
    return _or_suggest(index, found)


def _or_suggest(index: RepoIndex, found: SymbolLookup) -> SymbolLookup:
    if not found.hits:
        found.how = "none"
        found.suggestions = suggest(index, found.name)
    return found
