from __future__ import annotations

import pytest

from codeloop.edit.errors import AmbiguousMatch, BadReplacement, NoMatch
from codeloop.edit.matching import Edit, apply_edit

CODE = """\
import os


def load(path):
    with open(path) as fh:
        data = fh.read()
    return data


class Store:
    def save(self, key, value):
        if key:
            self.items[key] = value
        return True
"""


def apply(search: str, replace: str, text: str = CODE, **kw: object) -> tuple[str, str]:
    result = apply_edit(text, Edit(search, replace, **kw))  # type: ignore[arg-type]
    return result.text, result.strategy


TABBED = "def f():\n\tif x:\n\t\treturn 1\n"
QUOTED = 'msg = "hello"\nname = \'x\'\n'


@pytest.mark.parametrize(("search", "replace", "text", "level", "before", "after"), [
    pytest.param("        data = fh.read()\n", "        data = fh.read().strip()\n", CODE, "exact",
                 "        data = fh.read()\n", "        data = fh.read().strip()\n", id="exact"),
    pytest.param("        data = fh.read()   \n    return data \n",
                 "        data = fh.read()   \n    return data.upper()  \n", CODE,
                 "trailing_whitespace", "    return data\n", "    return data.upper()\n",
                 id="trailing-whitespace-ignored-and-not-copied"),
    pytest.param("if key:\n    self.items[key] = value\n",
                 "if key:\n    self.items[key] = value\n    self.dirty = True\n", CODE, "indentation",
                 "            self.items[key] = value\n",
                 "            self.items[key] = value\n            self.dirty = True\n",
                 id="dedented-search-reindented"),
    pytest.param("\tdef save(self, key, value):\n\t\tif key:\n",
                 "\tdef save(self, key, value):\n\t\tif key is not None:\n", CODE, "indentation",
                 "        if key:\n", "        if key is not None:\n", id="tabs-for-spaces"),
    pytest.param("  def save(self, key, value):\n    if key:\n      self.items[key] = value\n",
                 "  def save(self, key, value):\n    if key:\n      self.items[key] = value\n"
                 "      if value:\n        self.count += 1\n", CODE, "indentation",
                 "            self.items[key] = value\n",
                 "            self.items[key] = value\n            if value:\n"
                 "                self.count += 1\n", id="two-space-indent-scaled"),
    pytest.param("    if x:\n        return 1\n", "    if x:\n        return 2\n", TABBED,
                 "indentation", "\t\treturn 1\n", "\t\treturn 2\n", id="tab-indented-file-keeps-tabs"),
    pytest.param("msg = “hello”\n", "msg = “hello, world”\nother = ‘y’\n", QUOTED, "unicode",
                 'msg = "hello"\n', 'msg = "hello, world"\nother = \'y\'\n',
                 id="curly-quotes-matched-and-folded-in-new-lines"),
    pytest.param("import\u00a0os\n", "import sys\n", CODE, "unicode", "import os\n", "import sys\n",
                 id="odd-spaces"),
    pytest.param("import os\ndef load(path):\n", "import os\ndef load(path, mode='r'):\n", CODE,
                 "blank_lines", "def load(path):\n", "def load(path, mode='r'):\n",
                 id="missing-blank-lines"),
    pytest.param("\n\n    return data\n\n\n\n", "\n\n    return data or None\n\n\n\n", CODE,
                 "blank_lines", "    return data\n", "    return data or None\n",
                 id="spurious-blank-lines"),
    pytest.param("def load(path):\n    ...\n    return data\n",
                 "def load(path, mode='r'):\n    ...\n    return data\n", CODE, "elision",
                 "def load(path):\n", "def load(path, mode='r'):\n", id="elision-keeps-elided-lines"),
    pytest.param("    with open(path) as fh:\n        data = fh.raed()\n    return data\n",
                 "    with open(path) as fh:\n        data = fh.read()\n    return data + '!'\n", CODE,
                 "fuzzy", "    return data\n", "    return data + '!'\n", id="fuzzy-high-similarity"),
])
def test_each_level_changes_only_the_matched_lines(search: str, replace: str, text: str, level: str,
                                                    before: str, after: str) -> None:
    out, got = apply(search, replace, text)
    assert got == level
    assert text.count(before) == 1
    assert out == text.replace(before, after)


def test_no_match_shows_the_closest_region():
    with pytest.raises(NoMatch) as err:
        apply("totally different\ncontent here\n", "x\n")
    assert "closest region" in err.value.message


def test_fuzzy_refuses_without_a_clear_margin():
    text = "".join(f"def f{i}(a):\n    return a + {i}\n\n" for i in range(6))
    with pytest.raises(NoMatch) as err:
        apply("def f(a):\n    return a + 9\n", "def f(a):\n    return a\n", text)
    assert "neither was edited" in err.value.message


def test_ambiguity_at_each_level_lists_the_lines():
    text = "a = 1\nb = 2\n\na = 1\nb = 2\n"
    for search, level in [("a = 1\nb = 2\n", "exact"), ("a = 1  \nb = 2\n", "trailing"),
                          ("  a = 1\n  b = 2\n", "indentation"), ("a = 1\n\nb = 2\n", "blank")]:
        with pytest.raises(AmbiguousMatch) as err:
            apply(search, "z\n", text)
        assert err.value.lines == [1, 4], level
    with pytest.raises(AmbiguousMatch):
        apply("a = 1\n...\nb = 2\n", "z\n...\nb = 2\n", text)


def test_line_hint_and_anchor_settle_an_ambiguity():
    text = "def a():\n    x = 1\n\ndef b():\n    x = 1\n"
    out, _ = apply("    x = 1\n", "    x = 2\n", text, hint_line=5)
    assert out == "def a():\n    x = 1\n\ndef b():\n    x = 2\n"
    out, _ = apply("    x = 1\n", "    x = 2\n", text, anchors=("def b():",))
    assert out.endswith("    x = 2\n") and out.count("x = 1") == 1
    with pytest.raises(AmbiguousMatch):
        apply("    x = 1\n", "    x = 2\n", text, hint_line=40)


def test_reapplied_edit_is_reported_not_refused():
    result = apply_edit(CODE, Edit("    return True\n", "    return False\n"))
    again = apply_edit(result.text, Edit("    return True\n", "    return False\n"))
    assert again.already_applied and again.text == result.text


def test_replace_all_and_substring_semantics():
    out, _ = apply("value", "val", whole_lines=False, replace_all=True)
    assert "value" not in out and out.count("val") == 2
    with pytest.raises(AmbiguousMatch):
        apply("key", "k", whole_lines=False)


def test_single_line_substring_with_multiline_dedented_replacement():
    out, _ = apply("return True", "self.flush()\nreturn True", whole_lines=False)
    assert "        self.flush()\n        return True\n" in out


def test_empty_search_only_fills_an_empty_file():
    assert apply("", "x = 1\n", "")[0] == "x = 1\n"
    with pytest.raises(BadReplacement):
        apply("", "x = 1\n")


def test_no_trailing_newline_is_kept():
    out, _ = apply("b\n", "c\n", "a\nb")
    assert out == "a\nc"


def test_new_lines_follow_the_files_indent_style():
    out, _ = apply("class Store:\n", "class Store:\n\tlimit = 3\n")
    assert "class Store:\n    limit = 3\n" in out
    tabbed = "def f():\n\treturn 1\n"
    out, _ = apply("def f():\n", "def f():\n    x = 2\n", tabbed)
    assert out == "def f():\n\tx = 2\n\treturn 1\n"


def test_blank_only_search_is_placed_by_its_line_number():
    text = "a\n\nb\n\nc\n"
    out, _ = apply("\n", "\nnew\n", text, hint_line=4)
    assert out == "a\n\nb\n\nnew\nc\n"
    with pytest.raises(AmbiguousMatch):
        apply("\n", "\nnew\n", text)


def test_reapplied_insertion_is_not_inserted_twice_by_fuzzy_matching():
    text = "".join(f"line_{i} = {i}\n" for i in range(20))
    edit = Edit("line_5 = 5\nline_6 = 6\nline_7 = 7\n", "line_5 = 5\nline_6 = 6\nnew = 1\nline_7 = 7\n")
    once = apply_edit(text, edit)
    twice = apply_edit(once.text, edit)
    assert twice.already_applied and twice.text == once.text
