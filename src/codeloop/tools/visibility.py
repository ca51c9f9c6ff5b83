"""What tools that walk many files may show: not the files a `read(...)` deny rule covers.

A deny rule on `read(./.env)` stops `read_file .env`; without this filter `grep SECRET .`,
`list_files` or `search_code` would still show its contents or name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from codeloop.tools.base import ToolContext

READ_DENIED = "read_denied"
T = TypeVar("T")


def hidden_filter(ctx: ToolContext) -> Callable[[str], bool] | None:
    """The session's check "is this repository-relative path denied to read tools", if any."""
    check = ctx.services.get(READ_DENIED)
    return check if callable(check) else None


def visible(ctx: ToolContext, items: list[T], path_of: Callable[[T], str]) -> list[T]:
    """`items` without those whose path a read deny rule covers."""
    check = hidden_filter(ctx)
    if check is None:
        return items
    return [item for item in items if not check(path_of(item))]
