"""find_symbol("Class.method") through the class hierarchy, by the bare name, and "did you
mean" when nothing matches."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.index.service import RepoIndex
from codeloop.index.symbol_lookup import bases_of, lookup
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.tools.base import ToolContext
from codeloop.tools.search_tools import FindSymbol
from codeloop.workspace.copy import CopyWorkspace


class _NoSandbox:
    name = "none"

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        raise AssertionError("search tools must not run commands")


@pytest.fixture
def shapes(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "shapes").mkdir(parents=True)
    (root / "shapes" / "__init__.py").write_text("")
    (root / "shapes" / "base.py").write_text(
        "class Shape:\n"
        "    def area(self):\n        raise NotImplementedError\n\n"
        "    def describe(self):\n        return f'{type(self).__name__} of {self.area()}'\n")
    (root / "shapes" / "round.py").write_text(
        "from shapes import base\n\n\n"
        "class Circle(base.Shape, metaclass=type):\n"
        "    def area(self):\n        return 3.14\n\n\n"
        "class Unit(Circle):\n    radius = 1\n")
    (root / "shapes" / "poly.py").write_text(
        "class Polygon:\n    def perimeter(self):\n        return sum(self.sides)\n")
    return root


def _tool(shapes: Path, tmp_path: Path, name: str) -> tuple[str, dict[str, object]]:
    ctx = ToolContext(workspace=CopyWorkspace(shapes, tmp_path / "ws"), sandbox=_NoSandbox())
    obs = FindSymbol().run(FindSymbol.args_model(name=name), ctx)
    assert obs.ok
    return obs.output, obs.data


def test_bases_from_signatures() -> None:
    assert bases_of("class Circle(base.Shape, Mixin, metaclass=ABCMeta):") == ["Shape", "Mixin"]
    assert bases_of("class Plain:") == []
    assert bases_of("class A extends B implements C, D") == ["B", "C", "D"]


def test_an_inherited_method_is_found_on_its_base(shapes: Path, tmp_path: Path) -> None:
    out, data = _tool(shapes, tmp_path, "Unit.describe")
    assert data["resolved"] == "inherited"
    assert out.startswith("Unit does not define describe; it inherits it from Shape:")
    assert "shapes/base.py:5-6 method Shape.describe" in out
    # The nearest definition wins: Unit inherits Circle's area, not Shape's.
    index = RepoIndex(shapes)
    index.update()
    found = lookup(index, "shapes.round.Unit.area")
    assert found.how == "inherited" and found.inherited_from == "Circle"
    assert [(h.path, h.parent) for h in found.hits] == [("shapes/round.py", "Circle")]


def test_a_method_on_another_class_falls_back_to_the_bare_name(shapes: Path,
                                                               tmp_path: Path) -> None:
    out, data = _tool(shapes, tmp_path, "Circle.perimeter")
    assert data["resolved"] == "bare"
    assert out.startswith("no perimeter on Circle, Shape; definitions named perimeter")
    assert "shapes/poly.py:2-3 method Polygon.perimeter" in out


def test_nothing_found_suggests_close_names(shapes: Path, tmp_path: Path) -> None:
    out, data = _tool(shapes, tmp_path, "Circle.aera")
    assert "no definition named 'Circle.aera'" in out
    assert "Did you mean: Circle.area" in out
    assert data["suggestions"][0] == "Circle.area"
    out, data = _tool(shapes, tmp_path, "Polygone")
    assert "Did you mean: Polygon" in out
