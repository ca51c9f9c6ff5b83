"""How `codeloop eval` commands write their records and make the directories options name."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from codeloop.cli.safe_text import shown, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.eval.swebench.evaluate import InstanceResult

console = terminal_console()
OUTCOME_STYLE = {"resolved": "green", "not_resolved": "red", "env_unavailable": "yellow"}


def option_directory(path: Path, option: str) -> None:
    """Make the directory an option names, or say plainly why it cannot be one."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CodeloopError(f"{option} {path}: cannot make this directory ({exc.strerror})",
                            f"pass {option} a directory you can write to") from exc


def record_results(results: Iterable[InstanceResult], out: Path | None, mode: str,
                   as_json: bool) -> list[InstanceResult]:
    """Each result as it comes: a JSON line in `out` (opened with `mode`: "a" resumes) and
    on stdout with --json, else a line for people; all of them, for the summary."""
    done: list[InstanceResult] = []
    sink = out.open(mode, encoding="utf-8") if out else None
    try:
        for result in results:
            done.append(result)
            line = json.dumps(result.to_json())
            if sink:
                sink.write(line + "\n")
                sink.flush()
            if as_json:
                print(line, flush=True)
            else:
                console.print(Text.assemble(shown(result.instance_id), ": ",
                                            (result.outcome, OUTCOME_STYLE[result.outcome]), " ",
                                            shown(result.reason[:120])))
    finally:
        if sink:
            sink.close()
    return done
