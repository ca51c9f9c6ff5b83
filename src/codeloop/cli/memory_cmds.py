"""`codeloop memory list|show|add|forget|export|import`: your long-term memories."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.prompt import Confirm
from rich.table import Table
from rich.text import Text

from codeloop.cli.options import HERE, Repo
from codeloop.cli.safe_text import print_json, shown, shown_path, terminal_console
from codeloop.errors import CodeloopError

if TYPE_CHECKING:
    from codeloop.memory.records import Memory, MemoryKind, Scope
    from codeloop.session.memory_admin import MemoryAdmin

console = terminal_console()
memory_app = typer.Typer(help="Your long-term memories: conventions, corrections, episodes.",
                         no_args_is_help=True)

Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
IdsArg = Annotated[list[str], typer.Argument(help="Memory ids (or unique prefixes).")]


def _admin() -> MemoryAdmin:
    # The command line's sessions belong to the local owner: so do its memories.
    from codeloop.config import data_dir, load_settings
    from codeloop.session.memory_admin import open_admin
    from codeloop.session.redaction import session_redactor
    from codeloop.session.store import LOCAL_OWNER
    from codeloop.session.stores import database_url
    return open_admin(data_dir(), LOCAL_OWNER, session_redactor(load_settings()),
                      database_url=database_url())


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts))


def _table(memories: list[Memory]) -> Table:
    table = Table(title="memories")
    for col in ("id", "kind", "scope", "last used", "text"):
        table.add_column(col)
    for m in memories:
        table.add_row(m.id, m.kind, m.scope, _day(m.last_used),
                      shown(" ".join(m.text.split())[:90], one_line=True))
    return table


@memory_app.command("list")
def list_(repo: Repo = HERE,
          all_: Annotated[bool, typer.Option("--all", help="Every repository's, not only this one's.")] = False,
          kind: Annotated[str | None, typer.Option(help="Only this kind: fact, correction or episode.")] = None,
          json_out: Json = False) -> None:
    """Memories sessions on the repository may recall (yours, and the team's), newest first."""
    memories = _admin().listing(None if all_ else repo, kind)
    if json_out:
        print_json([m.public() for m in memories], indent=2)
    elif not memories:
        console.print("no memories" + ("" if all_ else " for this repository (see --all)"))
    else:
        console.print(_table(memories))


@memory_app.command()
def show(memory_id: Annotated[str, typer.Argument(help="A memory id (or unique prefix).")],
         json_out: Json = False) -> None:
    """One memory with where it came from."""
    memory = _admin().show(memory_id)
    if json_out:
        print_json(memory.public(), indent=2)
        return
    console.print(Text.assemble((memory.id, "bold"), f"  {memory.provenance()}"))
    if memory.repo:
        console.print(Text.assemble("repository: ", shown_path(memory.repo)))
    console.print(f"scope {memory.scope}; last used {_day(memory.last_used)}; "
                  f"expires {_day(memory.expires)}; recalled {memory.uses} times")
    console.print(shown(memory.text))


@memory_app.command()
def add(text: Annotated[str, typer.Argument(help="The fact, convention or lesson.")],
        repo: Repo = HERE,
        kind: Annotated[str, typer.Option(help="What it is: fact or correction.")] = "fact",
        scope: Annotated[str, typer.Option(help="Who recalls it: repo (you, on this repository), user (you, everywhere) or team (everyone, on this repository).")] = "repo",
        ttl_days: Annotated[float | None, typer.Option(min=0.001, help="Forget it after this many days unused (default: a year).")] = None,
        json_out: Json = False) -> None:
    """Store a memory; refused when it looks like instructions to an AI or holds a secret."""
    memory = _admin().add(text, _choice(kind, ("fact", "correction"), "--kind"),  # type: ignore[arg-type]
                          _choice(scope, ("repo", "user", "team"), "--scope"),  # type: ignore[arg-type]
                          repo, ttl_days)
    if json_out:
        print_json(memory.public(), indent=2)
    else:
        console.print(f"remembered as {memory.id} ({memory.scope} scope)")


def _choice(value: str, allowed: tuple[str, ...], option: str) -> MemoryKind | Scope:
    if value not in allowed:
        raise CodeloopError(f"{option} {value!r} is not one of {', '.join(allowed)}",
                            f"pass {option} {allowed[0]}")
    return value  # type: ignore[return-value]


@memory_app.command()
def forget(ids: IdsArg,
           yes: Annotated[bool, typer.Option("--yes", help="Do not ask; forget them now.")] = False,
           json_out: Json = False) -> None:
    """Delete memories for good: from recall and from the file (no copy is kept)."""
    admin = _admin()
    chosen = [admin.show(i) for i in ids]
    if not yes:
        if not sys.stdin.isatty():
            raise CodeloopError("forget asks before deleting, and there is no terminal to ask",
                                "pass --yes to forget without a question")
        for memory in chosen:
            console.print(Text.assemble((memory.id, "bold"), " ",
                                        shown(" ".join(memory.text.split())[:90], one_line=True)))
        if not Confirm.ask(f"Forget {len(chosen)} memory(ies) for good?", default=False,
                           console=console):
            console.print("nothing forgotten")
            raise typer.Exit(1)
    gone = admin.forget([m.id for m in chosen])
    if json_out:
        print_json({"forgotten": gone})
    else:
        console.print(f"forgot {', '.join(gone)}")


@memory_app.command()
def export(repo: Repo = HERE,
           all_: Annotated[bool, typer.Option("--all", help="Every repository's, not only this one's.")] = False,
           out: Annotated[Path | None, typer.Option("--out", "-o", metavar="FILE", help="File to write (default stdout).")] = None) -> None:
    """Write your own memories as JSON (`codeloop memory import` reads it back)."""
    doc = _admin().export(None if all_ else repo)
    if out is None:
        print_json(doc, indent=2)
        return
    out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    count = len(doc["memories"])  # type: ignore[arg-type]
    terminal_console(stderr=True).print(Text.assemble("wrote ", shown_path(out),
                                                      f" ({count} memories)"))


@memory_app.command("import")
def import_(file: Annotated[Path, typer.Argument(help="A file `codeloop memory export` wrote.")],
            json_out: Json = False) -> None:
    """Add the memories of an export as yours, each checked as `add` checks it."""
    from codeloop.session.memory_admin import MemoryFileError
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemoryFileError(f"cannot read {file}: {exc}",
                              "give a file `codeloop memory export` wrote") from exc
    result = _admin().import_(document)
    if json_out:
        print_json(result.public(), indent=2)
    else:
        console.print(f"imported {len(result.added)}, already there {result.existing}, "
                      f"refused {len(result.refused)}")
        for index, reason in result.refused:
            console.print(Text.assemble(f"  #{index}: ", shown(reason, one_line=True)))
    if result.refused:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")
