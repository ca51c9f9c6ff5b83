"""Rendering session events for people (rich) and machines (JSON lines)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from codeloop.cli.safe_text import markup_safe, print_json, shown, shown_path, terminal_console
from codeloop.events import PlanStep, StoredEvent
from codeloop.llm.types import StreamDelta
from codeloop.policy.scrub import for_terminal

MAX_OUTPUT_LINES = 12
COMMAND_CHARS = 100
STATUS_STYLE = {"finished": "green", "budget_exceeded": "yellow", "stuck": "yellow",
                "stopped": "yellow", "paused": "yellow", "needs_human": "yellow",
                "error": "red", "context_overflow": "red", "cancelled": "red"}


def short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mcp_line(data: dict[str, Any]) -> Text:
    """One line for an MCP server's event; names from a server are foreign text."""
    server = shown(data["server"], "bold")
    if data["type"] == "mcp_server_failed":
        return Text.assemble(("MCP server ", "red"), server, (" failed: ", "red"),
                             shown(data["error"]))
    if data["type"] == "mcp_tools_changed":
        what = "accepted its new tool list" if data["accepted"] else (
            "changed its tools; its next call asks you (added: "
            f"{', '.join(data['added']) or '-'}, removed: {', '.join(data['removed']) or '-'}, "
            f"changed: {', '.join(data['changed']) or '-'})")
        return Text.assemble(("MCP server ", "yellow"), server, " ", shown(what))
    line = Text.assemble(("MCP server ", "cyan"), server, f": {len(data['tools'])} tools")
    if data["withheld"]:
        line.append_text(Text.assemble(("; withheld: ", "yellow"),
                                       shown(", ".join(data["withheld"]))))
    return line


def changed(changes: dict[str, Any], prefix: str = "") -> str:
    """`base_url → http://…, budgets.max_steps → 5`: a settings change in one line."""
    return ", ".join(changed(v, f"{prefix}{k}.") if isinstance(v, dict) else f"{prefix}{k} → {v}"
                     for k, v in changes.items())


def diff_view(diff: str) -> Syntax:
    """A diff coloured by line kind; its lines are made safe before they are styled."""
    return Syntax(for_terminal(diff), "diff", theme="ansi_dark", background_color="default",
                  word_wrap=True)


STEP_STYLE = {"pending": ("○", "white"), "in_progress": ("◐", "cyan"), "done": ("●", "green"),
              "failed": ("✗", "red"), "skipped": ("⊘", "dim")}


def plan_table(summary: str, steps: list[PlanStep], title: str = "plan") -> Table:
    """A plan's steps for people: status, id, title (with detail and note), dependencies."""
    table = Table(title=Text(f"{title}: ") + shown(summary), title_justify="left", expand=False)
    for col in ("", "id", "step", "after"):
        table.add_column(col)
    for step in steps:
        mark, style = STEP_STYLE[step.status]
        text = shown(step.title)
        if step.detail:
            text += Text("\n") + shown(step.detail, "dim")
        if step.files:
            text += Text("\nfiles: ", "dim") + shown(", ".join(step.files), "dim")
        if step.done_when:
            text += Text("\ndone when: ", "dim") + shown(step.done_when, "dim")
        if step.note:
            text += Text("\n") + shown(step.note, "italic dim")
        table.add_row(Text(mark, style=style), shown(step.id), text,
                      shown(", ".join(step.depends_on)))
    return table


def context_line(data: dict[str, Any]) -> str:
    """What a `context_built` event put in front of the model, on one line."""
    outlines = [s["path"] for s in data["spans"] if s["kind"] == "outline"]
    snippets = [s for s in data["spans"] if s["kind"] == "snippet"]
    files = list(dict.fromkeys(s["path"] for s in snippets))
    extra = " + embeddings" if data["embeddings"] else ""
    return (f"context ({data['phase']}{extra}): {len(outlines)} files outlined, "
            f"{len(snippets)} snippets from {', '.join(for_terminal(f) for f in files[:4]) or '-'}"
            f"{' …' if len(files) > 4 else ''} · {data['tokens']:,} of {data['budget']:,} "
            f"tokens · built in {data['build_ms']:.0f} ms")


def usage_table(rows: list[dict[str, Any]]) -> Table:
    """Calls, tokens and cost per model and role (`summary_dict(...)["by_model"]`)."""
    table = Table(title="by model and role", title_justify="left", expand=False)
    for col in ("model", "role", "calls", "input", "output", "cost"):
        table.add_column(col, justify="right" if col in ("calls", "input", "output", "cost")
                         else "left")
    for r in rows:
        table.add_row(shown(r["model"], one_line=True), shown(r["role"]), str(r["calls"]),
                      f"{r['input_tokens']:,}", f"{r['output_tokens']:,}",
                      f"${r['cost_usd']:.4f}")
    return table


def role_budget_table(rows: list[dict[str, Any]]) -> Table:
    """Each role's (and the current step's) use of its share of the session's budgets."""
    table = Table(title="budgets by role", title_justify="left", expand=False)
    for col in ("", "turns", "tokens", "cost", "spent"):
        table.add_column(col, justify="left" if col in ("", "spent") else "right")
    for r in rows:
        table.add_row(shown(r["name"]), _of(r, "turns", "turn_limit"),
                      _of(r, "tokens", "token_limit"), _of(r, "cost_usd", "cost_limit", "${:.4f}"),
                      Text(r["spent"] or "", style="red"))
    return table


def _of(row: dict[str, Any], used: str, limit: str, fmt: str = "{:,}") -> str:
    """"used / limit" (∞ for no limit)."""
    cap = fmt.format(row[limit]) if row[limit] else "∞"
    return f"{fmt.format(row[used])} / {cap}"


def _role_line(kind: str, data: dict[str, Any]) -> Text | None:
    """The roles' events (plan revisions, step checks, reviews, explorers) as one line."""
    if kind == "step_checked":
        ok = ("passed", "green") if data["ok"] else ("failed", "red")
        return Text.assemble(("check ", "cyan"), shown(data["step_id"]), " ",
                             shown(data["check"], "dim"), ": ", ok)
    if kind == "review_requested":
        return Text.assemble(("review ", "cyan"), f"{data['round']} requested: ",
                             shown(short(data["summary"], 200)))
    if kind == "review_given":
        style = "green" if data["verdict"] == "approve" else "yellow"
        return Text.assemble(("reviewer ", "cyan"), (data["verdict"].replace("_", " "), style),
                             ": " if data["reasons"] else "", shown(data["reasons"]))
    if kind == "explorer_started":
        return Text.assemble(("explorer ", "cyan"), shown(data["subagent"]), " started: ",
                             shown(short(data["question"], 200)))
    if kind == "explorer_finished":
        what = (f"answered in {data['turns']} turns" if data["ok"] else
                f"did not answer: {data['error']}")
        return Text.assemble(("explorer ", "cyan"), shown(data["subagent"]), " ", shown(what),
                             (f" · {data['input_tokens'] + data['output_tokens']:,} tokens · "
                              f"${data['cost_usd']:.4f}", "dim"))
    return None


class JsonRenderer:
    """One JSON object per event on stdout."""

    def on_event(self, stored: StoredEvent) -> None:
        print_json({"seq": stored.seq, "session_id": stored.session_id,
                    **stored.event.model_dump(mode="json")})

    def on_delta(self, delta: StreamDelta) -> None:
        return None


class LiveRenderer:
    """The timeline as it happens: thoughts, tool calls, short outputs, diffs, running cost."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or terminal_console()
        self.tokens = 0
        self.cost = 0.0
        self.streamed = False
        # Verification commands already shown: each is shown once, shortened.
        self.commands: list[str] = []

    def on_delta(self, delta: StreamDelta) -> None:
        if delta.text:
            self.console.print(shown(delta.text, "dim"), end="")
            self.streamed = True

    def on_event(self, stored: StoredEvent) -> None:
        e = stored.event
        c = self.console
        kind = e.type
        data = e.model_dump()
        if kind == "session_started":
            c.print(Panel(Text.assemble(shown(data["task"], "bold"), "\nrepo: ", shown_path(data["repo"]),
                                        "\nmodel: ", shown(data["model"])),
                          title=f"session {stored.session_id}", border_style="cyan"))
        elif kind == "session_resumed":
            c.print(f"[cyan]resumed[/] (interrupted calls: {len(data['interrupted_calls'])})")
        elif kind in ("mcp_server_connected", "mcp_server_failed", "mcp_tools_changed"):
            c.print(mcp_line(data))
        elif kind == "settings_overridden":
            c.print(f"[cyan]settings changed[/] from here on: {markup_safe(changed(data['changes']))}")
        elif kind == "model_call_finished":
            if self.streamed:
                c.print()
            elif data["text"].strip():
                c.print(Text(for_terminal(data["text"]).strip(), style="dim"))
            self.streamed = False
            usage = data["usage"]
            self.tokens += usage["input_tokens"] + usage["output_tokens"]
            self.cost += data["cost_usd"]
            est = "~" if usage["estimated"] else ""
            c.print(f"[dim]step {data['step']} · {est}{self.tokens:,} tokens · "
                    f"${self.cost:.4f} · {data['latency_ms']:.0f} ms[/]")
            for call in data["tool_calls"]:
                args = call["arguments"] if call["arguments"] is not None else call["raw_arguments"]
                c.print(Text.assemble(("→ ", "bold cyan"), shown(call["name"], "bold cyan"),
                                      " ", shown(short(args))))
        elif kind == "tool_call_finished":
            mark = "[green]✓[/]" if data["ok"] else "[red]✗[/]"
            body = (f"ERROR: {data['error']}\n" if data["error"] else "") + data["output"]
            # Escaped first: `splitlines` would silently eat a lone CR, FF or U+2028.
            body = for_terminal(body).strip()
            lines = body.split("\n") if body else []
            lines_shown = lines[:MAX_OUTPUT_LINES]
            more = (f"\n… {len(lines) - len(lines_shown)} more lines"
                    if len(lines) > len(lines_shown) else "")
            c.print(f"  {mark} [dim]{markup_safe(data['name'])}[/]")
            if lines_shown:
                c.print(Text("    " + "\n    ".join(lines_shown) + more, style="grey50"))
        elif kind == "verification_ran":
            self._verification(data)
        elif kind == "file_edited":
            c.print(Text.assemble(("edited ", "magenta"), shown(data["path"], "magenta", one_line=True),
                                  " ", shown(f"({data['strategy']})", "dim")))
            c.print(diff_view(data["diff"]))
        elif kind == "plan_proposed":
            steps = [PlanStep.model_validate(st) for st in data["steps"]]
            asks = " (needs approval)" if data["needs_approval"] else ""
            c.print(plan_table(data["summary"], steps, title=f"plan proposed{asks}"))
        elif kind == "plan_revised":
            steps = [PlanStep.model_validate(st) for st in data["steps"]]
            asks = " (needs approval)" if data["needs_approval"] else ""
            c.print(Text.assemble((f"plan revision {data['revision']}", "cyan"), ": ",
                                  shown(data["reason"])))
            c.print(Text("\n".join(data["diff"]), style="dim"))
            c.print(plan_table(data["summary"], steps, title=f"plan revised{asks}"))
        elif kind == "plan_updated":
            changes = ", ".join(f"{ch['id']} → {ch['status'] or 'note'}" for ch in data["changes"])
            by = " (loop)" if data["by"] == "loop" else ""
            c.print(f"[cyan]plan progress{by}:[/] {markup_safe(changes)}")
        elif kind == "context_built":
            c.print(Text(context_line(data), style="cyan"))
        elif kind == "system_note":
            # The reviewer's brief holds the whole diff: its first lines say enough here.
            text = data["text"].split("\n\n")[0] if data["kind"] == "review_brief" else data["text"]
            c.print(f"[yellow]note:[/] {markup_safe(text)}")
        elif kind == "memory_recalled":
            c.print(f"[cyan]recalled {len(data['ids'])} memories[/] ({data['trigger']}): "
                    f"{markup_safe(' '.join(data['ids']))}")
        elif kind == "memory_stored":
            c.print(f"[cyan]remembered[/] {markup_safe(data['id'])} "
                    f"({data['kind']}, {data['scope']} scope)")
        elif (line := _role_line(kind, data)) is not None:
            c.print(line)
        elif kind in ("budget_warning", "loop_detected"):
            c.print(f"[yellow]{kind.replace('_', ' ')}:[/] {markup_safe(short(data, 200))}")
        elif kind == "egress_decided" and not data["allowed"]:
            c.print(Text.assemble(("network refused ", "yellow"),
                                  shown(f"{data['method']} {data['host']}:{data['port']}",
                                        one_line=True), ": ", shown(data["reason"], "dim")))
        elif kind == "network_host_allowed":
            c.print(Text.assemble(("network: ", "cyan"), shown(data["entry"], one_line=True),
                                  " allowed for the rest of the session"))
        elif kind == "policy_decided" and data["decision"] != "allow":
            c.print(f"[yellow]policy {data['decision']}[/]: {markup_safe(data['reason'])}")
        elif kind == "model_routed":
            c.print(Text.assemble(("model ", "cyan"), shown(data["model"], "cyan", one_line=True),
                                  f" for {data['purpose']} ({data['role']}): ",
                                  shown(data["reason"], "dim")))
        elif kind == "model_fell_back":
            c.print(Text.assemble(("fell back ", "yellow"), shown(data["from_model"], one_line=True),
                                  " → ", shown(data["to_model"], one_line=True),
                                  f" ({data['cause']}): ", shown(data["error"], "dim")))
        elif kind == "auxiliary_model_call":
            self.cost += data["cost_usd"]
            self.tokens += data["usage"]["input_tokens"] + data["usage"]["output_tokens"]
            status = "" if data["ok"] else f" failed ({data['error_kind']})"
            c.print(Text.assemble((f"{data['purpose']} by ", "dim"),
                                  shown(data["model"], "dim", one_line=True),
                                  (f"{status} · ${data['cost_usd']:.4f}", "dim")))
        elif kind == "model_call_failed":
            c.print(f"[red]model call failed[/] ({markup_safe(data['error_kind'])}): "
                    f"{markup_safe(data['message'])}")
        elif kind == "session_paused":
            c.print(f"[yellow]paused:[/] {markup_safe(data['reason'])}")
        elif kind == "worker_lost":
            then = "paused" if data["gave_up"] else "placed again"
            c.print(f"[yellow]worker lost[/] (placement {data['attempt']}, {then}): "
                    f"{markup_safe(data['error'])}")
        elif kind == "branch_committed":
            c.print(f"[green]branch[/] {markup_safe(data['branch'])}: commit "
                    f"{data['commit'][:12]} on {data['base'][:12]}, {len(data['files'])} file(s)")
        elif kind == "pull_request_opened":
            c.print(f"[green]pull request[/] {markup_safe(data['url'] or data['branch'])}")
        elif kind == "session_finished":
            style = STATUS_STYLE.get(data["status"], "white")
            text = data["summary"] or data["reason"]
            c.print(Panel(shown(text or "(no summary)"), title=f"[{style}]{data['status']}[/]",
                          border_style=style))

    def _verification(self, data: dict[str, Any]) -> None:
        """One line per verification call; the interpreter and each command are said once
        (shortened: `show --json` and `export` hold them in full)."""
        c = self.console
        # A finish on files verified already re-runs nothing: the last results stand.
        counts = f"{data['passed']} passed, {data['failed']} failed" if data["commands"] else "nothing re-ran"
        extra = [f"{len(data[k])} {word}" for k, word in (("new_failures", "new"), ("fixed_failures", "fixed"))
                 if data[k]]
        c.print(Text.assemble(("verification", "cyan"), f" ({data['phase']}): ",
                              shown(", ".join([counts, *extra]), one_line=True)))
        for reason in data.get("could_not_run") or []:
            c.print(Text.assemble(("  could not run the tests: ", "bold red"), shown(reason, one_line=True)))
        if data.get("python"):
            c.print(Text.assemble(("  python: ", "dim"), shown(data["python"], "dim", one_line=True)))
        for command in data["commands"]:
            if not any(command.startswith(seen) for seen in self.commands):
                self.commands.append(command)
                c.print(Text.assemble(("  command: ", "dim"), shown(short(command, COMMAND_CHARS), "dim")))
