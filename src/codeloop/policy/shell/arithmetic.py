"""Telling an arithmetic `(( … ))` body from commands that bash would run as subshells."""

from __future__ import annotations

import re

_INNER_SUBST = re.compile(r"\$\([^()]*\)|`[^`]*`")
_ADJACENT_OPERANDS = re.compile(r"[\w\])}'\"]\s+[\w$'\"]")


def looks_arithmetic(body: str, for_loop: bool) -> bool:
    """No `;` (except in `for ((…;…;…))`), balanced parentheses, and no two operands side by
    side (`echo hi`)."""
    while True:  # substitutions inside are followed separately; drop them for this test
        reduced = _INNER_SUBST.sub("0", body)
        if reduced == body:
            break
        body = reduced
    if ";" in body and not for_loop:
        return False
    depth = 0
    for c in body:  # `((a) | (b))`: the first `)` closes a subshell, not a parenthesis
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return not _ADJACENT_OPERANDS.search(body)
