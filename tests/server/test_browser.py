"""The web page in headless Chromium: watch a session live, approve commands, apply the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.browser import require_chromium, session_page
from tests.server.conftest import write_script
from tests.session.helpers import FIX_SCRIPT, FIXED

pytestmark = pytest.mark.browser
playwright = require_chromium()


def test_watch_approve_review_apply(tmp_path: Path, repo: Path, data_dir: Path) -> None:
    script = write_script(tmp_path / "fix.json", FIX_SCRIPT)
    with session_page(data_dir, repo, script, approval_mode="auto-edit") as opened:
        page, sid = opened.page, opened.session_id
        expect = playwright.expect

        expect(page.locator("#whoami")).to_have_text("signed in as admin")
        assert "token" not in page.url, "the token leaves the address bar"
        expect(page.locator(f"#sessions tr[data-id='{sid}']")).to_be_visible()
        expect(page.locator("#timeline .ev.thought").first).to_contain_text("Reading the code.")
        approval = page.locator("#approvals .approval")
        expect(approval).to_contain_text("unittest discover")
        page.screenshot(path=str(tmp_path / "approval.png"), full_page=True)
        thoughts = page.locator("#timeline .ev.thought").count()

        approval.locator("button.approve").click()
        expect(page.locator("#timeline .ev.edit")).to_contain_text("return a + b")
        assert page.locator("#timeline .ev.thought").count() > thoughts, "new events arrived live"
        expect(approval).to_have_count(1)
        approval.locator("button.approve").click()

        expect(page.locator("#s-status")).to_have_text("finished")
        expect(page.locator("#review")).to_be_visible()
        expect(page.locator("#review-diff .add")).to_contain_text("return a + b")
        output = page.locator("#timeline .ev.tool details").first
        expect(output.locator("pre")).to_be_hidden()
        output.locator("summary").click()
        expect(output.locator("pre")).to_be_visible()
        page.screenshot(path=str(tmp_path / "review.png"), full_page=True)

        page.locator("#btn-apply").click()
        expect(page.locator("#review-result")).to_contain_text("applied: calc.py")
        assert (repo / "calc.py").read_text() == FIXED
        seqs = [int(s) for s in page.locator("#timeline .ev").evaluate_all(
            "nodes => nodes.map(n => n.dataset.seq)")]
        assert seqs == sorted(set(seqs)), "no event is shown twice or out of order"
