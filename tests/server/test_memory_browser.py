"""The web page in headless Chromium lists the long-term memories a session was shown, with
where each came from, and marks the recall in the timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.memory.owners import memory_owner
from codeloop.server.auth import ADMIN_USER
from codeloop.session.memory_admin import open_admin
from codeloop.session.setup import session_redactor
from tests.server.browser import require_chromium, session_page

pytestmark = pytest.mark.browser

playwright = require_chromium()


def test_the_session_view_lists_the_memories_used(tmp_path: Path, repo: Path, script: Path,
                                                  data_dir: Path) -> None:
    # The admin's memories are the command line's (memory.owners).
    admin = open_admin(data_dir, memory_owner(ADMIN_USER), session_redactor(Settings()))
    note = admin.add("the tests pass only once calc.add adds", repo=repo)
    with session_page(data_dir, repo, script) as opened:
        page = opened.page
        expect = playwright.expect
        expect(page.locator("#s-status")).to_have_text("finished", timeout=60_000)
        used = page.locator("#memories li.memory")
        expect(used).to_have_count(1)
        expect(used).to_contain_text(note.text)
        expect(used).to_contain_text(note.id)
        expect(used.locator(".tag")).to_have_text("task")
        expect(used.locator(".muted")).to_contain_text("user local")
        expect(page.locator("#timeline")).to_contain_text("recalled 1 memories (task)")
        page.screenshot(path=str(tmp_path / "memories.png"), full_page=True)
