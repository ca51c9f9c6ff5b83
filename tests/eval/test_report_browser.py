"""The HTML report of a recorded run, opened in headless Chromium: tables, plots, a screenshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.server.browser import ARGS, CHROMIUM, require_chromium

from codeloop.eval.records import load_run
from codeloop.eval.report import html_report, summary

pytestmark = pytest.mark.browser
playwright = require_chromium()

ORACLE = Path(__file__).resolve().parents[2] / "docs/results/swebench-sympy.oracle.jsonl"


def test_report_page_renders_its_tables_and_plots(tmp_path: Path) -> None:
    records = load_run(ORACLE)
    figures = summary(records)
    page_file = tmp_path / "report.html"
    page_file.write_text(html_report(records, "sympy oracle"))
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            expect = playwright.expect
            expect(page.locator("h1")).to_have_text("sympy oracle")
            cells = page.locator("#summary td").all_inner_texts()
            assert cells[:4] == [str(figures["instances"]), str(figures["judged"]),
                                 str(figures["resolved"]), str(figures["resolved_pct"])]
            expect(page.locator("#instances tbody tr")).to_have_count(len(records))
            widths = page.locator("#plots img").evaluate_all(
                "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
            assert len(widths) == 5 and all(w > 100 for w in widths), widths
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 20_000
        finally:
            browser.close()
