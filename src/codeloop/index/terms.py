"""Code-aware terms for lexical search: identifiers split at snake_case and camelCase."""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_MIN_LEN = 2
_MAX_LEN = 40

# English and code words so common that they only add noise to long issue texts.
_STOPWORD_TEXT = """
a an and are as at be but by can could did do does for from had has have how i if in into
is it its me my no not of on or our should so some such that the their then there these they
this to too was we were what when where which while who why will with would you your self
def return import none true false class pass else elif try except finally raise lambda
var let const function new null undefined void public private static int str
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


# Bounded: a cold build of a large repository sees ~200k distinct words (~35 MB cached).
@lru_cache(maxsize=50_000)
def split_identifier(word: str) -> tuple[str, ...]:
    """`getHTTPResponse_code` -> (gethttpresponse_code, get, http, response, code)."""
    lower = word.lower()
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    if len(parts) <= 1:
        return (lower,)
    return (lower, *parts)


def terms(text: str) -> list[str]:
    """The search terms of a text: whole identifiers plus their parts, without stopwords."""
    out: list[str] = []
    for word in _WORD.findall(text):
        if len(word) > _MAX_LEN:
            continue
        for term in split_identifier(word):
            if len(term) >= _MIN_LEN and term not in STOPWORDS:
                out.append(term)
    return out


@lru_cache(maxsize=16)
def query_terms(text: str) -> tuple[str, ...]:
    """`terms` of a query, remembered: one task text is searched over chunks and over files
    in a row, and a long issue text takes milliseconds to split."""
    return tuple(terms(text))


def path_terms(rel_path: str) -> list[str]:
    """Terms of a path, so that `sympy/printing/latex.py` matches "latex printing"."""
    return terms(rel_path.replace("/", " ").replace(".", " "))
