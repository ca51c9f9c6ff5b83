"""`codeloop trust`: let a repository's own `.codeloop/config.toml` loosen settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from codeloop.cli.options import HERE, repo_option
from codeloop.cli.safe_text import markup_safe, terminal_console
from codeloop.errors import ConfigError


def notice_untrusted(repo: Path, console: Console) -> None:
    """Tell the user which keys of the project's config file are not applied, and why."""
    from codeloop.config import ignored_project_keys, project_config_path
    ignored = ignored_project_keys(repo)
    if ignored:
        console.print(
            f"[yellow]note:[/] {markup_safe(project_config_path(repo))} is not trusted; ignored: "
            f"{markup_safe(', '.join(ignored))}. Review it, then run `codeloop trust --repo "
            f"{markup_safe(repo)}` to apply it.")


def register(app: typer.Typer) -> None:
    @app.command("trust")
    def trust_command(
        repo: Annotated[Path, repo_option("The repository whose config file to trust "
                                          "(default: the current directory).")] = HERE,
        revoke_: Annotated[bool, typer.Option("--revoke", help="Stop trusting it.")] = False,
        yes: Annotated[bool, typer.Option("--yes", help="Do not ask; trust the file as it is.")] = False,
        json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Trust this repository's .codeloop/config.toml (hooks, sandbox, model, base_url...)."""
        from codeloop.config import data_dir, ignored_project_keys, project_config_path
        from codeloop.policy.scrub import for_terminal
        from codeloop.project_trust import is_trusted, revoke, trust
        from codeloop.workspace.hostfs import SafeRoot
        repo = repo.resolve()
        config = project_config_path(repo)
        data = data_dir()
        console = terminal_console()
        if revoke_:
            removed = revoke(repo, data)
            _report(console, json_out, repo, "revoked" if removed else "was not trusted")
            return
        tree = SafeRoot(repo)  # the file in the repository, never a link's target
        if not tree.is_file(config):
            raise ConfigError(f"{config} does not exist", "nothing to trust in this repository")
        if is_trusted(repo, config, data):
            _report(console, json_out, repo, "already trusted")
            return
        ignored = ignored_project_keys(repo)
        if not yes:
            from rich.syntax import Syntax  # pygments: loaded only to show the file

            # The repository wrote this file: shown escaped to the person deciding to trust it.
            console.print(Syntax(for_terminal(tree.read_text(config)), "toml"))
            console.print(f"Trusting applies: "
                          f"{markup_safe(', '.join(ignored)) or '(nothing it tightens only)'}")
            if not typer.confirm("Trust this file as it is now?", default=False):
                _report(console, json_out, repo, "not trusted")
                raise typer.Exit(1)
        digest = trust(repo, config, data)
        _report(console, json_out, repo, "trusted", digest, ignored)


def _report(console: Console, json_out: bool, repo: Path, status: str, digest: str = "",
            applied: list[str] | None = None) -> None:
    if json_out:
        print(json.dumps({"repo": str(repo), "status": status, "sha256": digest,
                          "applied": applied or []}))
    else:
        console.print(f"{markup_safe(repo)}: {status}")
