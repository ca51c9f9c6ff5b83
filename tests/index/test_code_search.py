"""search_code on the queries a model writes: one result per file, source before tests and
docs unless asked, and an empty answer that says what was tried."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeloop.index.code_search import intent_of
from codeloop.sandbox.base import CommandResult, Limits
from codeloop.tools.base import ToolContext
from codeloop.tools.search_tools import SearchCode
from codeloop.workspace.copy import CopyWorkspace


class _NoSandbox:
    name = "none"

    def run(self, command: str, cwd: Path, env: dict[str, str] | None = None,
            limits: Limits | None = None) -> CommandResult:
        raise AssertionError("search tools must not run commands")


def _functions(prefix: str, count: int, body: str) -> str:
    return "".join(f"def {prefix}_{n}(invoice):\n    {body}\n\n\n" for n in range(count))


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "repo"
    for folder in ("billing", "tests", "docs"):
        (root / folder).mkdir(parents=True)
    (root / "billing" / "__init__.py").write_text("")
    # One file with many chunks that all match: before, they filled the top five.
    (root / "billing" / "invoice.py").write_text(
        _functions("invoice_total", 7, "return invoice.total + invoice.tax_total"))
    (root / "billing" / "ledger.py").write_text(
        "def post_invoice_total(ledger, invoice):\n    ledger.add(invoice.total)\n")
    (root / "billing" / "refund.py").write_text(
        "def refund_invoice(invoice):\n    return -invoice.total\n")
    (root / "billing" / "discount.py").write_text(
        "def apply_discount_rate(amount, rate):\n    return amount * (1 - rate)\n")
    # Tests and docs say the words more often than the source does.
    (root / "tests" / "test_discount.py").write_text("".join(
        f"def test_discount_rate_{n}():\n    # discount rate discount rate\n"
        f"    assert apply_discount_rate(100, 0.{n}) <= 100  # discount rate\n\n\n"
        for n in range(1, 6)))
    (root / "docs" / "discount.rst").write_text(
        "Discount rate\n=============\n\nThe discount rate is a rate; discount rate "
        "examples: discount rate 0.1, discount rate 0.2.\n")
    return ToolContext(workspace=CopyWorkspace(root, tmp_path / "ws"), sandbox=_NoSandbox())


_TITLE = re.compile(r"^([\w./-]+):\d+-\d+", re.M)


def _search(ctx: ToolContext, query: str, **extra: object) -> list[str]:
    """The paths of the results, in the order the model reads them."""
    obs = SearchCode().run(SearchCode.args_model(query=query, **extra), ctx)
    assert obs.ok
    return _TITLE.findall(obs.output)


def test_results_are_one_per_file_with_other_hits_folded(ctx: ToolContext) -> None:
    paths = _search(ctx, "invoice total", limit=5)
    assert paths[0] == "billing/invoice.py"
    assert len(paths) == len(set(paths)) >= 3
    assert {"billing/ledger.py", "billing/refund.py"} <= set(paths[:5])
    # The best chunk of invoice.py is shown; its six other matching functions are folded.
    obs = SearchCode().run(SearchCode.args_model(query="invoice total", limit=5), ctx)
    assert len(obs.data["files"][0]["also"]) == 6
    assert "also matching in this file:" in obs.output and "+2 more" in obs.output
    assert obs.output.count("billing/invoice.py:") == 1


def test_source_ranks_before_tests_and_docs(ctx: ToolContext) -> None:
    assert _search(ctx, "discount rate")[0] == "billing/discount.py"
    # Markdown bold is not a path glob.
    assert _search(ctx, "**Describe the bug** discount rate")[0] == "billing/discount.py"


def test_markdown_bold_around_a_sentence_is_not_a_glob() -> None:
    # Issue templates close bold after a full stop ("**Please describe.**"), seen in
    # search_quality.py's queries: taken as a glob, it kept no file at all.
    for query in ("**Please describe.** When a system has a single array, it fails",
                  "**The same problem also causes the discovery error.** I traced it",
                  "**Note:** the parser drops the element"):
        assert intent_of(query).glob is None, query
    for query, glob in (("discount rate tests/*.py", "tests/*.py"), ("rate in *.rst", "*.rst"),
                        ("cart src/**/*.py", "src/**/*.py"), ("find **/test_*.py", "**/test_*.py"),
                        ("under docs/**", "docs/**")):
        assert intent_of(query).glob == glob, query


def test_tests_and_docs_rank_high_when_the_query_asks(ctx: ToolContext) -> None:
    assert _search(ctx, "tests for discount rate")[0] == "tests/test_discount.py"
    assert _search(ctx, "discount rate documentation")[0] == "docs/discount.rst"
    assert _search(ctx, "discount rate", glob="*.rst") == ["docs/discount.rst"]
    assert _search(ctx, "discount rate tests/*.py") == ["tests/test_discount.py"]


def test_an_empty_result_says_what_was_tried(ctx: ToolContext) -> None:
    obs = SearchCode().run(SearchCode.args_model(query="zzqx frobnicator"), ctx)
    assert obs.ok and not _TITLE.findall(obs.output)
    assert "no code matches 'zzqx frobnicator'" in obs.output
    assert "Searched for the terms zzqx, frobnicator" in obs.output
    assert "Try a broader query" in obs.output
    obs = SearchCode().run(SearchCode.args_model(query="discount", glob="*.go"), ctx)
    assert "Only paths matching '*.go' were kept" in obs.output
    obs = SearchCode().run(SearchCode.args_model(query="the of and"), ctx)
    assert "no searchable words" in obs.output


def test_a_file_changed_since_indexing_is_shown_as_it_is_now(ctx: ToolContext) -> None:
    assert _search(ctx, "refund invoice")[0] == "billing/refund.py"
    # Changed behind the index's back (no notify): the shown file is hash-checked.
    ctx.workspace.write("billing/refund.py",
                        b"# moved down\n\n\ndef refund_invoice(invoice):\n    return 0\n")
    obs = SearchCode().run(SearchCode.args_model(query="refund invoice"), ctx)
    assert obs.output.startswith("billing/refund.py:4-5 (refund_invoice)")
    assert "     5│     return 0" in obs.output


MATRIX = '''class MatrixBase:
    def inverse_mod(self, m):
        """Uses the determinant: det, det of the minors, det modulo m."""
        det = self.det()
        det_inverse = pow(det, -1, m)
        return [det_inverse * det for det in self.minors_det()]

    def minors_det(self):
        return [1]

    def det(self):
        return 1


class Matrix(MatrixBase):
    pass
'''


def test_a_query_naming_a_method_shows_that_method(tmp_path: Path) -> None:
    # The chunk that says "det" most often was shown, not the definition the query named.
    root = tmp_path / "repo"
    root.mkdir()
    (root / "matrices.py").write_text(MATRIX)
    ctx = ToolContext(workspace=CopyWorkspace(root, tmp_path / "ws"), sandbox=_NoSandbox())
    for query in ("MatrixBase.det", "Matrix.det", "the det() of a matrix"):
        obs = SearchCode().run(SearchCode.args_model(query=query), ctx)
        assert obs.output.startswith("matrices.py:11-12 (MatrixBase.det)"), (query, obs.output)
    # Words alone keep the best-scoring chunk.
    obs = SearchCode().run(SearchCode.args_model(query="determinant modulo"), ctx)
    assert obs.output.startswith("matrices.py:1-12 (MatrixBase)")


def test_a_name_asks_for_tests_only_where_the_repository_means_tests(tmp_path: Path) -> None:
    # In pytest `fixture` is a function of `fixtures.py`: searching for it asked for tests;
    # so did a reporter's `test_path_error` though the repository has no such test.
    root = tmp_path / "repo"
    (root / "runner").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "runner" / "fixtures.py").write_text(
        "def fixture(function=None, scope='function'):\n    return function\n")
    (root / "runner" / "scope.py").write_text("SCOPES = ('function', 'module')\n")
    (root / "tests" / "test_fixture.py").write_text("".join(
        f"@fixture\ndef fixture_{n}():\n    # fixture fixture scope\n    return {n}\n\n\n"
        for n in range(6)))
    ctx = ToolContext(workspace=CopyWorkspace(root, tmp_path / "ws"), sandbox=_NoSandbox())
    assert _search(ctx, "fixture")[0] == "runner/fixtures.py"
    assert _search(ctx, "fixture scope with --fixtures")[0] == "runner/fixtures.py"
    # A test the repository has, or "tests", still asks for tests.
    assert _search(ctx, "test_fixture")[0] == "tests/test_fixture.py"
    assert _search(ctx, "fixture_3 in test_fixture.py")[0] == "tests/test_fixture.py"
    assert _search(ctx, "tests for fixture scope")[0] == "tests/test_fixture.py"
    # A test of the reporter's own that no file has does not: its other words find source.
    assert _search(ctx, "test_fixture_scope_function")[0].startswith("runner/")
    # Without a repository to ask, the words ask as before.
    assert intent_of("fixture").tests and intent_of("test_fixture_scope_function").tests
