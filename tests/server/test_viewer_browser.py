"""The trajectory viewer in headless Chromium: an uploaded file and a recorded session on the
live server, the standalone page `codeloop view` writes, and the eval report's links to it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeloop.server.auth import TokenStore
from tests.server.browser import ARGS, CHROMIUM, require_chromium
from tests.server.conftest import DEFAULTS, write_script
from tests.server.live import live_server
from tests.server.trajectories import HOSTILE_SCRIPT, recorded_trajectory, with_extra_events, write

pytestmark = pytest.mark.browser
playwright = require_chromium()
expect = playwright.expect
CONTEXT = {"type": "context_built", "step": 1, "tokens": 1234, "files": ["calc.py"],
           "note": "<img src=x onerror=window.__pwned=5>"}
UNKNOWN = {"type": "brand_new_event", "detail": "<script>window.__pwned=6</script>"}


@contextmanager
def browser_page(errors: list[str]) -> Iterator[Any]:
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page
        finally:
            browser.close()


def money(x: float) -> str:
    return f"${x:.6f}"


def check_trajectory_shown(page: Any, doc: dict[str, Any]) -> None:
    """The timeline has every step, its cost, the edit's diff; the totals equal the summary."""
    summary = doc["summary"]
    finished = [e for e in doc["events"] if e["type"] == "model_call_finished"]
    steps = page.locator("#v-timeline .step[data-step]:not([data-step=start])")
    expect(steps).to_have_count(summary["steps"])
    for n, event in enumerate(finished):
        step = steps.nth(n)
        expect(step.locator(".step-cost")).to_have_text(money(event["cost_usd"]))
        expect(step.locator(".step-tokens")).to_contain_text(
            f"{event['usage']['input_tokens']:,} in / {event['usage']['output_tokens']:,} out")
    expect(page.locator("#v-timeline .ev.edit .add").first).to_contain_text("return a + b")
    expect(page.locator("#v-timeline .ev.edit .del").first).to_contain_text("return a - b")
    expect(page.locator("#v-totals tr.mismatch")).to_have_count(0)
    for key in ("steps", "input_tokens", "output_tokens"):
        row = page.locator(f"#v-totals tr[data-key={key}]")
        expect(row.locator(".computed")).to_have_text(f"{summary[key]:,}")
        expect(row.locator(".recorded")).to_have_text(f"{summary[key]:,}")
    cost = page.locator("#v-totals tr[data-key=cost_usd]")
    expect(cost.locator(".computed")).to_have_text(money(summary["cost_usd"]))
    assert summary["cost_usd"] > 0
    expect(page.locator("#v-by-model tr.usage")).to_have_count(len(summary["by_model"]))
    tool = page.locator("#v-timeline .ev.tool").first
    expect(tool.locator("pre")).to_be_hidden()
    tool.locator("summary").click()
    expect(tool.locator("pre")).to_be_visible()
    expect(page.locator("#v-diff .add")).to_contain_text("return a + b")


def test_uploaded_trajectory_in_the_served_viewer(tmp_path: Path, data_dir: Path) -> None:
    doc = with_extra_events(recorded_trajectory(tmp_path / "run"), CONTEXT, UNKNOWN)
    file = write(doc, tmp_path / "trajectory.json")
    errors: list[str] = []
    with live_server(data_dir, defaults=DEFAULTS) as base, browser_page(errors) as page:
        page.goto(f"{base}/view")
        page.locator("#v-file").set_input_files(str(file))
        expect(page.locator("#v-task")).to_have_text("make the tests pass")
        check_trajectory_shown(page, doc)
        thought = page.locator("#v-timeline .ev.thought").first
        expect(thought).to_contain_text("Reading the code.")
        expect(page.locator("#v-timeline .ev.verify").first).to_contain_text("verification")
        # The session's own context build, and the one the test added (seq 1000).
        context = page.locator("#v-timeline .ev.context[data-seq='1000']")
        expect(context).to_contain_text("context built")
        expect(context).to_contain_text("tokens 1234")
        expect(page.locator("#v-timeline .ev.other[data-type=brand_new_event]")).to_have_count(1)
        page.screenshot(path=str(tmp_path / "viewer.png"), full_page=True)
        assert (tmp_path / "viewer.png").stat().st_size > 20_000
        page.locator("#v-file").set_input_files(write({"format": "other"}, tmp_path / "x.json"))
        expect(page.locator("#v-error")).to_contain_text("not a codeloop trajectory")
        expect(page.locator("#v-doc")).to_be_hidden()
        page.evaluate("""text => {
            const data = new DataTransfer();
            data.items.add(new File([text], "dropped.json", { type: "application/json" }));
            document.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true,
                                                           cancelable: true }));
        }""", json.dumps(doc))
        expect(page.locator("#v-doc")).to_be_visible()
        expect(page.locator("#v-error")).to_have_text("")
        check_trajectory_shown(page, doc)
    assert errors == []


def test_recorded_session_by_id(tmp_path: Path, repo: Path, data_dir: Path) -> None:
    script = write_script(tmp_path / "fix.json")
    errors: list[str] = []
    with live_server(data_dir, defaults=DEFAULTS, allowed_roots=[repo.parent]) as base, \
            browser_page(errors) as page:
        auth = {"Authorization": f"Bearer {TokenStore(data_dir).admin_token}"}
        sid = httpx.post(f"{base}/sessions", headers=auth, json={
            "task": "make the tests pass", "repo": str(repo), "model": f"scripted:{script}"}
        ).json()["id"]
        deadline = time.monotonic() + 120
        while httpx.get(f"{base}/sessions/{sid}", headers=auth).json()["status"] != "finished":
            assert time.monotonic() < deadline, "the session did not finish"
            time.sleep(0.2)
        doc = httpx.get(f"{base}/sessions/{sid}/trajectory", headers=auth).json()
        page.goto(f"{base}/view#token={TokenStore(data_dir).admin_token}&session={sid}")
        expect(page.locator("#v-meta")).to_contain_text(sid)
        assert "token" not in page.url
        steps = page.locator("#v-timeline .step:not([data-step=start])")
        expect(steps).to_have_count(doc["summary"]["steps"])
        expect(page.locator("#v-totals tr.mismatch")).to_have_count(0)
        expect(page.locator("#v-diff .add")).to_contain_text("return a + b")
    assert errors == []


def assert_inert(page: Any) -> None:
    """Every hostile string shows as text; no element was made of it and no script ran."""
    expect(page.locator("#v-timeline .ev.thought").first).to_contain_text(
        '<img src=x onerror="window.__pwned=1">')
    expect(page.locator("#v-result")).to_contain_text("<script>window.__pwned=4</script>")
    expect(page.locator("#v-diff .add")).to_contain_text("<img src=x onerror=window.__pwned=3>")
    page.locator("#v-timeline details").evaluate_all("ds => ds.forEach(d => { d.open = true; })")
    expect(page.locator("#v-timeline")).to_contain_text("<script>window.__pwned=2</script>")
    expect(page.locator("#v-timeline")).to_contain_text("<script>window.__pwned=6</script>")
    time.sleep(0.3)  # an onerror would have fired by now
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#v-doc img, #v-doc script, #v-doc b").count() == 0


def test_hostile_trajectory_shows_as_text(tmp_path: Path, data_dir: Path) -> None:
    doc = with_extra_events(recorded_trajectory(tmp_path / "run", HOSTILE_SCRIPT), CONTEXT, UNKNOWN)
    file = write(doc, tmp_path / "hostile.json")
    errors: list[str] = []
    with live_server(data_dir, defaults=DEFAULTS) as base, browser_page(errors) as page:
        page.goto(f"{base}/view")
        page.locator("#v-file").set_input_files(str(file))
        assert_inert(page)
        page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
    out = tmp_path / "hostile.html"
    done = subprocess.run([sys.executable, "-m", "codeloop", "view", str(file), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with browser_page(errors) as page:
        page.goto(out.as_uri())
        assert_inert(page)
    assert errors == []


def test_standalone_page_and_the_eval_reports_links(tmp_path: Path) -> None:
    doc = recorded_trajectory(tmp_path / "run")
    trajectories = tmp_path / "trajectories"
    trajectories.mkdir()
    write(doc, trajectories / "demo__calc-1.json")
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"instance_id": "demo__calc-1", "repo": "demo/calc",
                               "outcome": "resolved", "steps": 5,
                               "cost_usd": doc["summary"]["cost_usd"],
                               "trajectory": "trajectories/demo__calc-1.json"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "codeloop", "eval", "report", str(run),
                           "-o", str(tmp_path / "report")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path / "run")
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    with browser_page(errors) as page:
        page.goto((tmp_path / "report" / "report.html").as_uri())
        page.locator("#instances a", has_text="demo__calc-1").click()
        expect(page.locator("#v-task")).to_have_text("make the tests pass")
        assert page.url.endswith("/report/trajectories/demo__calc-1.html")
        expect(page.locator("#v-open")).to_be_hidden()
        check_trajectory_shown(page, doc)
        page.screenshot(path=str(tmp_path / "standalone.png"), full_page=True)
    assert errors == []
