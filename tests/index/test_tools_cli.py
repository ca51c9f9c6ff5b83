from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli import main
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.tools.base import ToolContext
from codeloop.tools.search_tools import (
    FindReferences,
    FindSymbol,
    RepoMapTool,
    SearchCode,
    index_for,
)
from codeloop.workspace.copy import CopyWorkspace


class _NoSandbox:
    """The search tools never run commands; any call is a bug, so this one fails loudly."""

    name = "none"

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        raise AssertionError("search tools must not run commands")


def context(repo: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=CopyWorkspace(repo, tmp_path / "ws"), sandbox=_NoSandbox())


def test_tools_return_line_numbered_observations(repo: Path, tmp_path: Path) -> None:
    ctx = context(repo, tmp_path)
    obs = SearchCode().run(SearchCode.args_model(query="apply discount", limit=1), ctx)
    assert obs.ok and obs.output.startswith("shop/pricing.py:4-6 (apply_discount)")
    assert "     4│ def apply_discount" in obs.output
    assert obs.truncated and "more results exist" in obs.output

    obs = FindSymbol().run(FindSymbol.args_model(name="total_price"), ctx)
    assert "shop/cart.py:11-12 method ShoppingCart.total_price" in obs.output

    obs = FindReferences().run(FindReferences.args_model(name="apply_discount"), ctx)
    assert obs.output.startswith("shop/cart.py:12:")

    obs = RepoMapTool().run(RepoMapTool.args_model(focus="cart total"), ctx)
    assert obs.data["files"][0] == "shop/cart.py"
    assert "class ShoppingCart:" in obs.output


def test_tools_see_edits_in_the_workspace(repo: Path, tmp_path: Path) -> None:
    ctx = context(repo, tmp_path)
    assert "no definition" in FindSymbol().run(FindSymbol.args_model(name="refund"), ctx).output
    ctx.workspace.write("shop/refunds.py", b"def refund(order):\n    return order\n")
    # The loop tells the index about its edits; without that a new file waits for the sweep.
    index_for(ctx).notify_changed(["shop/refunds.py"])
    obs = FindSymbol().run(FindSymbol.args_model(name="refund"), ctx)
    assert "shop/refunds.py:1-2 function refund" in obs.output


def test_cli_index_and_search(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--repo", str(repo), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["added"] == 4 and figures["definitions"] >= 5
    assert main(["search", "apply discount", "--repo", str(repo), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["path"] == "shop/pricing.py"
    assert main(["search", "ShoppingCart", "--symbol", "--repo", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["line"] == 4
    assert main(["search", "VAT_\\w+", "--regex", "--repo", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["path"] == "shop/pricing.py"


def test_cli_rejects_a_missing_directory(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--repo", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in " ".join(capsys.readouterr().err.split())
