"""Showing text that a repository, a model or a tool controls to the person at the terminal.

Such text is never parsed as rich markup (a file name `[link=…]x[/link]` prints as typed)
and every control or invisible character in it is shown escaped (`policy.scrub.for_terminal`):
the only escape sequences on the terminal are the colours rich makes of our own styles.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from codeloop.policy.scrub import for_terminal, json_for_terminal


def terminal_console(*, stderr: bool = False, soft_wrap: bool = False) -> Console:
    """A console for the CLI: no `:emoji:` codes and no guessing highlighter on foreign text."""
    return Console(stderr=stderr, highlight=False, emoji=False, soft_wrap=soft_wrap)


def shown(value: object, style: str = "", *, one_line: bool = False) -> Text:
    """Foreign text as a rich `Text`: escapes visible, never markup."""
    return Text(for_terminal(str(value), one_line=one_line), style=style)


def markup_safe(value: object, *, one_line: bool = False) -> str:
    """Foreign text to put inside a markup string of ours: escapes visible, brackets literal."""
    return escape(for_terminal(str(value), one_line=one_line))


def shown_path(value: object) -> Text:
    """A file name or path: as `shown`, and a newline or tab in it is shown too."""
    return shown(value, one_line=True)


def print_json(value: Any, **dumps: Any) -> None:
    """Machine output on stdout: JSON whose strings carry no raw control or bidi character."""
    sys.stdout.write(json_for_terminal(json.dumps(value, ensure_ascii=False, **dumps)) + "\n")
    sys.stdout.flush()
