"""The web page in headless Chromium: a pending plan shown with its steps, denied with a
reason, the revision approved, and the plan's progress followed to the end."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from codeloop.server.auth import TokenStore
from tests.planner.helpers import WORK, propose
from tests.server.conftest import DEFAULTS, write_script
from tests.server.live import live_server
from tests.server.test_browser import ARGS, CHROMIUM

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
    pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api")


def test_deny_then_approve_a_plan_and_watch_its_progress(tmp_path: Path, repo: Path,
                                                         data_dir: Path) -> None:
    script = write_script(tmp_path / "plan.json",
                          [propose("p1"), propose("p2", summary="revised: name the test"), *WORK])
    with live_server(data_dir, defaults=DEFAULTS) as base, \
            playwright.sync_playwright() as pw:
        token = TokenStore(data_dir).admin_token
        created = httpx.post(f"{base}/sessions", headers={"Authorization": f"Bearer {token}"},
                             json={"task": "make the tests pass", "repo": str(repo),
                                   "model": f"scripted:{script}", "plan_approval": True})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]

        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{base}/#token={token}&session={sid}")
        expect = playwright.expect

        pending = page.locator("#approvals .approval.plan")
        expect(pending).to_contain_text("fix add() in calc.py")
        expect(pending.locator(".step")).to_have_count(3)
        expect(pending.locator(".step[data-step='fix']")).to_contain_text("after read")
        expect(page.locator("#timeline .ev.plan").first).to_contain_text("needs approval")
        expect(page.locator("#plan")).to_be_hidden()
        page.screenshot(path=str(tmp_path / "plan-pending.png"), full_page=True)

        pending.locator("input").fill("name the test file")
        pending.locator("button.deny").click()
        expect(pending).to_contain_text("revised: name the test")
        expect(page.locator("#timeline .ev.tool.fail")).to_contain_text(
            "rejected this plan: name the test file")
        pending.locator("button.approve").click()

        expect(page.locator("#s-status")).to_have_text("finished")
        expect(page.locator("#plan")).to_be_visible()
        expect(page.locator("#plan-summary")).to_have_text("revised: name the test")
        expect(page.locator("#t-plan")).to_have_text("3 / 3 steps")
        expect(page.locator("#plan-steps .step.st-done")).to_have_count(3)
        expect(page.locator("#timeline .ev.plan")).to_have_count(4)  # 2 proposals, 2 updates
        expect(page.locator("#timeline .ev.plan").last).to_contain_text("test → done")
        page.screenshot(path=str(tmp_path / "plan-done.png"), full_page=True)
        assert errors == []
        browser.close()
