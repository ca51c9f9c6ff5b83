"""The web page in headless Chromium: a pending plan shown with its steps, denied with a
reason, the revision approved, and the plan's progress followed to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.config_tables import RolesSettings
from tests.planner.helpers import WORK, propose
from tests.server.browser import require_chromium, session_page
from tests.server.conftest import DEFAULTS, write_script
from tests.session.test_roles_plan import REPLAN_SCRIPT

pytestmark = pytest.mark.browser

playwright = require_chromium()


def test_deny_then_approve_a_plan_and_watch_its_progress(tmp_path: Path, repo: Path,
                                                         data_dir: Path) -> None:
    script = write_script(tmp_path / "plan.json",
                          [propose("p1"), propose("p2", summary="revised: name the test"), *WORK])
    with session_page(data_dir, repo, script, plan_approval=True) as opened:
        page = opened.page
        expect = playwright.expect

        pending = page.locator("#approvals .approval.plan")
        expect(pending).to_contain_text("fix add() in calc.py")
        expect(pending.locator(".step")).to_have_count(3)
        expect(pending.locator(".step[data-step='fix']")).to_contain_text("after read")
        expect(page.locator("#timeline .ev.plan").first).to_contain_text("needs approval")
        expect(page.locator("#plan")).to_be_hidden()
        page.screenshot(path=str(tmp_path / "plan-pending.png"), full_page=True)

        pending.locator("input").fill("name the test file")
        page.evaluate("refreshDetail()")  # an event arriving while the reason is typed
        expect(pending.locator("input")).to_have_value("name the test file")
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


def test_a_revised_plan_its_checks_and_the_role_budgets_are_shown(tmp_path: Path, repo: Path,
                                                                 data_dir: Path) -> None:
    script = write_script(tmp_path / "roles.json", REPLAN_SCRIPT)
    defaults = DEFAULTS.model_copy(update={"roles": RolesSettings(enabled=True, review=False)})
    with session_page(data_dir, repo, script, defaults) as opened:
        page = opened.page
        expect = playwright.expect
        expect(page.locator("#s-status")).to_have_text("finished", timeout=60_000)
        expect(page.locator("#plan-summary")).to_contain_text("(revision 1)")
        expect(page.locator("#plan-steps .step.st-done")).to_have_count(2)
        expect(page.locator("#plan-steps .step[data-step='fix']")).to_contain_text("done when:")
        expect(page.locator("#timeline")).to_contain_text("plan revision 1")
        expect(page.locator("#timeline .ev.verify.fail")).to_contain_text("check fix")
        expect(page.locator("#timeline")).to_contain_text("plan progress (loop)")
        expect(page.locator("#role-budgets")).to_be_visible()
        expect(page.locator("#role-budgets tbody tr")).to_have_count(4)
        expect(page.locator("#role-budgets tbody tr").first).to_contain_text("planner")
        page.screenshot(path=str(tmp_path / "roles-done.png"), full_page=True)
