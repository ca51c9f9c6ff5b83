from __future__ import annotations

from pathlib import Path

from codeloop.index.focus import code_words, focus_of, path_term_files, without_reports
from codeloop.index.service import RepoIndex

XARRAY_STYLE_REPORT = """Concatenating loses attributes.

```python
xr.concat([a, b], dim="x")
```

<details>
<summary>Output of xr.show_versions()</summary>

INSTALLED VERSIONS
------------------
python: 3.8.5
netCDF4: 1.5.4
h5netcdf: 0.8.1
</details>
"""


def test_pasted_environment_reports_are_dropped_and_the_bug_kept() -> None:
    text = without_reports(XARRAY_STYLE_REPORT)
    assert 'xr.concat([a, b], dim="x")' in text
    assert "Concatenating loses attributes." in text
    assert "netCDF4" not in text and "show_versions" not in text

    bare = "Crash on import.\n\n#### INSTALLED VERSIONS\ncommit: None\npandas: 1.1.0\n"
    assert without_reports(bare).strip() == "Crash on import."
    pins = "Fails with these:\nattrs==20.1.0\npluggy==0.13.1\nThen it crashes.\n"
    assert without_reports(pins) == "Fails with these:\nThen it crashes."


def test_details_that_are_not_reports_stay() -> None:
    text = "See the log.\n<details>\nTraceback: KeyError in merge_attrs\n</details>\n"
    assert "merge_attrs" in without_reports(text)


def test_code_words_come_from_code_not_prose() -> None:
    text = ("The printer is wrong for sums.\n\n```\n>>> latex(Sum(x, (x, 1, 3)))\n```\n"
            "Calling `pprint` works, and so does expr.doit().\n"
            'File "/x/printing/pretty.py", line 12, in render\n')
    words = code_words(text)
    assert {"latex", "Sum", "pprint", "doit", "render"} <= words
    assert not {"printer", "wrong", "sums", "works"} & words


def _add(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_an_everyday_word_used_as_code_points_at_its_definitions(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for i in range(6):  # `render` is defined in six files: too common as a prose word
        _add(root, f"pkg/view{i}.py", "def render(x):\n    return x\n")
    index = RepoIndex(root)
    index.update()
    assert not focus_of(index, "the render is slow").files
    as_code = focus_of(index, "Slow:\n```\nrender(big)\n```\n")
    assert set(as_code.files) == {f"pkg/view{i}.py" for i in range(6)}


def test_path_components_named_in_text_rank_their_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _add(root, "sphinx/builders/linkcheck.py", "def check(uri):\n    return uri\n")
    _add(root, "sphinx/builders/html.py", "def build(doc):\n    return doc\n")
    _add(root, "sphinx/ext/napoleon/docstring.py", "def parse(text):\n    return text\n")
    _add(root, "sphinx/ext/napoleon/__init__.py", "")
    _add(root, "docs/linkcheck.rst", "linkcheck\n=========\n")
    index = RepoIndex(root)
    index.update()
    found = path_term_files(index, "The Linkcheck builder reports napoleon sections twice")
    # The rarer name (one file) before the folder (two files); prose files are left out.
    assert found == ["sphinx/builders/linkcheck.py", "sphinx/ext/napoleon/__init__.py",
                     "sphinx/ext/napoleon/docstring.py"]
    assert path_term_files(index, "the builder is slow") == []
