"""Edits keep the whitespace the model did not touch, or are refused.

(a) The search lost one of two blank lines the file has: where the change meets them, the
    file's blank lines either stay exactly as they are or the edit is refused.
(b) A 2-space edit of a 4-space file with continuation lines aligned under a bracket: new
    continuation lines go under the same bracket in the file's text, and widths no rule
    maps are refused.
"""

from __future__ import annotations

import pytest

from codeloop.edit.errors import AmbiguousWhitespace, BadReplacement
from codeloop.edit.matching import Edit, apply_edit

CLASSES = """\
class A:
    def f(self):
        return 1

    def g(self):
        return 2


class B:
    pass
"""


def apply(text: str, search: str, replace: str) -> str:
    return apply_edit(text, Edit(search, replace), "src/a.py").text


# --- (a) a blank line lost from a run of two ---------------------------------------------


@pytest.mark.parametrize(("search", "replace"), [
    pytest.param("        return 2\n\nclass B:\n",
                 "        return 2\n\n    def h(self):\n        return 3\n\nclass B:\n",
                 id="insert-between-the-run-and-the-next-line"),
    pytest.param("        return 2\n\nclass B:\n",
                 "        return 2\n\nclass C:\n    pass\n\nclass B:\n",
                 id="insert-a-block-that-ends-with-a-blank-line"),
    pytest.param("        return 1\n\n    def g(self):\n        return 2\n\nclass B:\n",
                 "        return 1\n\nclass B:\n",
                 id="delete-a-block-bordered-by-blank-lines"),
    pytest.param("        return 2\n\nclass B:\n",
                 "        return 2\n\nVERSION = 2\n\nclass Beta:\n",
                 id="replace-with-lines-inserted-before"),
])
def test_blank_line_lost_next_to_a_change_is_refused(search: str, replace: str) -> None:
    with pytest.raises(AmbiguousWhitespace) as err:
        apply(CLASSES, search, replace)
    # The refusal says where, shows the file's lines there and how to make the edit exact.
    assert "at lines 7-8 the file has 2 blank lines where the search text has 1" in err.value.message
    assert "    7 | \n    8 | \n    9 | class B:" in err.value.message
    assert "every blank line included" in err.value.hint
    assert err.value.lines == [7, 8]


def test_following_the_refusal_applies_the_edit_exactly() -> None:
    # Guard (passed before the fix too): with every blank line copied, the edit is exact.
    search = "        return 2\n\n\nclass B:\n"
    replace = "        return 2\n\n    def h(self):\n        return 3\n\n\nclass B:\n"
    assert apply(CLASSES, search, replace) == CLASSES.replace(
        "        return 2\n", "        return 2\n\n    def h(self):\n        return 3\n")


def test_blank_lines_away_from_the_change_stay_exactly() -> None:
    # Guard (passed before the fix too): the lost blank line is next to no change, so the
    # file's run is kept whole.
    search = "        return 2\n\nclass B:\n    pass\n"
    replace = "        return 2\n\nclass B:\n    value = 1\n"
    assert apply(CLASSES, search, replace) == CLASSES.replace("    pass\n", "    value = 1\n")


def test_a_repeated_line_does_not_hide_where_the_blank_line_goes() -> None:
    # `return x` occurs twice in the replacement: read one way the new function follows the
    # first blank line of the file's run, read the other way it precedes the second.
    text = "def f(x):\n    return x\n\n\ndef g():\n    pass\n"
    search = "def f(x):\n    return x\n\ndef g():\n"
    replace = "def f(x):\n    return x\ndef h(x):\n    return x\n\n\ndef g():\n"
    with pytest.raises(AmbiguousWhitespace):
        apply(text, search, replace)


# --- (b) 2-space edits of a 4-space file with bracket-aligned lines ---------------------------

SCHECHTER = """\
class Schechter:
    phi = Parameter(default=1., description=('Normalization '
                                             'factor'))

    def evaluate(self, mag):
        if mag:
            return 1
        return 0
"""


def test_two_space_edit_maps_block_lines_by_the_block_lines_only() -> None:
    # The aligned continuation line (2-space column 43, file column 45) is not a block
    # width: counting it made the search's 2 -> 4 map look like a shift by 2.
    search = ("  phi = Parameter(default=1., description=('Normalization '\n"
              "                                           'factor'))\n"
              "\n"
              "  def evaluate(self, mag):\n"
              "    if mag:\n"
              "      return 1\n")
    replace = ("  phi = Parameter(default=1., description=('Normalization '\n"
               "                                           'factor'))\n"
               "\n"
               "  def evaluate(self, mag):\n"
               "    if mag:\n"
               "      if mag > 2:\n"
               "        return 2\n"
               "      total = combine(mag,\n"
               "                      phi)\n"
               "      return total\n")
    assert apply(SCHECHTER, search, replace) == SCHECHTER.replace(
        "            return 1\n",
        "            if mag > 2:\n"
        "                return 2\n"
        "            total = combine(mag,\n"
        "                            phi)\n"
        "            return total\n")


ALIGNED = """\
class Store:
    def save(self, key, value,
             default=None):
        if key:
            self.items[key] = compute(value,
                                      default)
        return True
"""


def test_two_space_edit_keeps_continuation_lines_under_their_bracket() -> None:
    # Guard (passed before the fix too): new parameters and arguments under their bracket.
    search = ("  def save(self, key, value,\n"
              "           default=None):\n"
              "    if key:\n"
              "      self.items[key] = compute(value,\n"
              "                                default)\n")
    replace = ("  def save(self, key, value,\n"
               "           default=None,\n"
               "           strict=False):\n"
               "    if key:\n"
               "      self.items[key] = compute(value,\n"
               "                                default,\n"
               "                                strict)\n"
               "      self.dirty = True\n")
    assert apply(ALIGNED, search, replace) == """\
class Store:
    def save(self, key, value,
             default=None,
             strict=False):
        if key:
            self.items[key] = compute(value,
                                      default,
                                      strict)
            self.dirty = True
        return True
"""


def test_two_space_edit_with_a_width_no_rule_maps_is_refused() -> None:
    # Column 5 is neither a block width of the search (2, 4) nor under a bracket.
    text = "def f():\n    if x:\n        return 1\n"
    search = "  if x:\n    return 1\n"
    replace = "  if x:\n    return 1\n     # odd\n"
    with pytest.raises(BadReplacement, match="column 5"):
        apply(text, search, replace)


def test_two_space_block_in_a_four_space_file_is_refused() -> None:
    # The search shows no indented line, so nothing says how to re-indent the new block.
    text = "import os\n\n\ndef f():\n    return 1\n"
    with pytest.raises(BadReplacement, match="indents its block by 2 spaces"):
        apply(text, "import os\n", "import os\n\n\ndef g():\n  return 2\n")
