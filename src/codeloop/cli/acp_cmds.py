"""`codeloop acp`: codeloop as an Agent Client Protocol agent for editors."""

from __future__ import annotations

import typer


def acp_cmd() -> None:
    """Speak the Agent Client Protocol on stdin/stdout, so an editor (Zed, JetBrains, Neovim)
    can run codeloop sessions; see docs/editors.md."""
    import asyncio

    from codeloop.editor.agent import CodeloopAgent
    from codeloop.editor.stdio import serve
    from codeloop.session.entry import open_store

    asyncio.run(serve(CodeloopAgent(open_store())))


def register(app: typer.Typer) -> None:
    app.command("acp")(acp_cmd)
