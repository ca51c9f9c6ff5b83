"""The web page in headless Chromium: watch a session live, approve commands, apply the diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from codeloop.server.auth import TokenStore
from tests.server.conftest import DEFAULTS, write_script
from tests.server.live import live_server
from tests.session.helpers import FIX_SCRIPT, FIXED

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
    print(f"browser tests skipped: {CHROMIUM} is missing (apt-get install -y chromium)")
    pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api")


def test_watch_approve_review_apply(tmp_path: Path, repo: Path, data_dir: Path) -> None:
    script = write_script(tmp_path / "fix.json", FIX_SCRIPT)
    with live_server(data_dir, defaults=DEFAULTS) as base, \
            playwright.sync_playwright() as pw:
        token = TokenStore(data_dir).admin_token
        created = httpx.post(f"{base}/sessions", headers={"Authorization": f"Bearer {token}"},
                             json={"task": "make the tests pass", "repo": str(repo),
                                   "model": f"scripted:{script}", "approval_mode": "auto-edit"})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]

        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{base}/#token={token}&session={sid}")
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
        assert errors == []
        browser.close()
