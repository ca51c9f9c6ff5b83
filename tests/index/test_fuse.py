from __future__ import annotations

from codeloop.index.rank import Signals, fuse


def ranked(found: Signals, **kwargs: object) -> list[str]:
    return [p for p, _ in fuse(found, **kwargs)]  # type: ignore[arg-type]


def test_the_heavier_list_decides_and_a_zero_weight_list_is_ignored() -> None:
    found = Signals({"chunks": ["a.py", "b.py"], "history": ["b.py", "a.py"]}, {})
    assert ranked(found, weights={"chunks": 1.0, "history": 2.0}) == ["b.py", "a.py"]
    assert ranked(found, weights={"chunks": 1.0, "history": 0.5}) == ["a.py", "b.py"]
    only = Signals({"chunks": ["a.py"], "history": ["c.py"]}, {})
    assert ranked(only, weights={"chunks": 1.0, "history": 0.0}) == ["a.py", "c.py"]
    assert dict(fuse(only, weights={"chunks": 1.0, "history": 0.0}))["c.py"] == 0.0


def test_a_far_better_bm25_score_breaks_a_tie_of_positions() -> None:
    found = Signals({"files": ["b.py", "a.py"], "chunks": ["a.py", "b.py"]},
                    {"files": {"b.py": 9.0, "a.py": 1.0}, "chunks": {"a.py": 2.0, "b.py": 1.9}})
    both = {"files": 1.0, "chunks": 1.0}
    assert ranked(found, weights=both, score_weights={"files": 0.0, "chunks": 0.0}) == [
        "a.py", "b.py"]  # equal positions: the name decides
    assert ranked(found, weights=both, score_weights={"files": 0.01, "chunks": 0.02}) == [
        "b.py", "a.py"]


def test_tests_and_docs_rank_below_the_source_they_tie_with() -> None:
    found = Signals({"chunks": ["tests/test_parser.py", "docs/parser.rst", "pkg/parser.py"]}, {})
    assert ranked(found, weights={"chunks": 1.0})[0] == "pkg/parser.py"


def test_packaging_files_rank_below_the_source_they_tie_with() -> None:
    found = Signals({"chunks": ["setup.py", "pylint/__pkginfo__.py", "pylint/lint/run.py",
                                "src/pkg/_version.py", "src/pkg/versions.py"]}, {})
    assert ranked(found, weights={"chunks": 1.0})[:2] == ["pylint/lint/run.py",
                                                          "src/pkg/versions.py"]


def test_code_in_a_language_without_a_grammar_ranks_as_code_not_as_prose() -> None:
    """Cython, Fortran, Julia…: no tree-sitter grammar here, but their files are where a
    change lands, above the notes and docs they tie with."""
    for code in ("astropy/table/_column_mixins.pyx", "src/solver.f90", "src/Kernel.jl",
                 "R/model.R", "CMakeLists.txt", "src/AppDelegate.m", "toolbox/solve.m"):
        found = Signals({"chunks": ["NOTES.txt", "docs/guide.md", code]}, {})
        assert ranked(found, weights={"chunks": 1.0})[0] == code
    found = Signals({"chunks": ["notes.unknownext", "pkg/guide.py"]}, {})
    assert ranked(found, weights={"chunks": 1.0}) == ["pkg/guide.py", "notes.unknownext"]
