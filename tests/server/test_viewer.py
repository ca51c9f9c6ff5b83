"""The trajectory viewer's server side: the page, the trajectory endpoint, the standalone file
(`codeloop view`) and the eval report's links to it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from codeloop.server.viewer_page import embedded_json, standalone_viewer
from tests.server.conftest import Api
from tests.server.trajectories import recorded_trajectory, write

HOSTILE = {"format": "codeloop-trajectory/1", "events": [],
           "summary": {"task": "</script><script>alert(1)</script><!--<script>", "x": "a&b>c"}}


def codeloop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=120)


def test_embedded_json_cannot_leave_its_script_element() -> None:
    text = embedded_json(HOSTILE)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == HOSTILE


def test_standalone_page_runs_only_its_own_scripts() -> None:
    page = standalone_viewer(HOSTILE, "a <title>")
    assert "<title>a &lt;title&gt;</title>" in page
    assert "/static/" not in page, "the page needs no server"
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy and "default-src 'none'" in policy.group(1)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 2
    for script in scripts:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy.group(1)
    data = re.search(r'<script id="trajectory" type="application/json">(.*?)</script>', page, re.S)
    assert data and json.loads(data.group(1)) == HOSTILE
    assert page.count("</script>") == 3


def test_view_page_and_trajectory_endpoint(serve: Callable[..., Api], repo: Path,
                                           script: Path) -> None:
    api = serve()
    page = api.client.get("/view")
    assert page.status_code == 200 and 'id="v-timeline"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    sid = api.create(repo, script)
    api.wait_status(sid, "finished")
    assert api.client.get(f"/sessions/{sid}/trajectory").status_code == 401
    assert api.get("/sessions/nope/trajectory").status_code == 404
    doc = api.ok("get", f"/sessions/{sid}/trajectory")
    assert doc["format"] == "codeloop-trajectory/1" and doc["session"]["id"] == sid
    assert doc["summary"]["steps"] == 5
    assert "+    return a + b" in doc["diff"] and doc["diff_source"] == "workspace"


def test_codeloop_view_writes_a_page_beside_the_file(tmp_path: Path) -> None:
    file = write(recorded_trajectory(tmp_path / "run"), tmp_path / "t.json")
    done = codeloop("view", str(file), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"html": str(tmp_path / "t.html")}
    assert '"codeloop-trajectory/1"' in (tmp_path / "t.html").read_text()
    again = codeloop("view", str(tmp_path / "t.html"), cwd=tmp_path)
    assert again.returncode != 0 and "cannot read trajectory" in again.stderr + again.stdout
    same = codeloop("view", str(file), "-o", str(file), cwd=tmp_path)
    assert same.returncode != 0 and "overwritten" in same.stderr + same.stdout
    assert json.loads(file.read_text())["format"] == "codeloop-trajectory/1"


def test_eval_report_links_viewer_pages(tmp_path: Path) -> None:
    file = write(recorded_trajectory(tmp_path / "run"), tmp_path / "a.json")
    rows = [{"instance_id": "org/x#1", "repo": "org/x", "outcome": "resolved", "trajectory": str(file)},
            {"instance_id": "gone-2", "repo": "org/x", "outcome": "not_resolved",
             "trajectory": "missing.json"},
            {"instance_id": "none-3", "repo": "org/x", "outcome": "not_resolved"}]
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = codeloop("eval", "report", str(run), "-o", str(tmp_path / "rep"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "rep" / "report.html").read_text()
    assert '<a href="trajectories/org_x_1.html">org/x#1</a>' in report
    assert '<a href="missing.json">gone-2</a>' in report, "unreadable: the recorded path"
    assert ">none-3<" in report and "none-3</a>" not in report
    assert list((tmp_path / "rep" / "trajectories").iterdir()) == [
        tmp_path / "rep" / "trajectories" / "org_x_1.html"]
    plain = codeloop("eval", "report", str(run), "-o", str(tmp_path / "plain"), "--no-viewer",
                     cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert f'<a href="{file}">org/x#1</a>' in (tmp_path / "plain" / "report.html").read_text()
    assert not (tmp_path / "plain" / "trajectories").exists()
