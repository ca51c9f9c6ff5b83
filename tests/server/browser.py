"""Headless Chromium on the live server: a session created through the API, its page open."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeloop.config import Settings
from codeloop.server.auth import TokenStore
from tests.server.conftest import DEFAULTS
from tests.server.live import live_server

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def require_chromium() -> Any:
    """Skip the calling module without Debian's chromium; the Playwright sync API otherwise."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        print(f"browser tests skipped: {CHROMIUM} is missing (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)",
                    allow_module_level=True)
    api = pytest.importorskip("playwright.sync_api")
    # A session verifies and edits between what a test waits for; on a loaded 2-core machine
    # (CI, or a suite running beside other work) that takes longer than Playwright's 5 s.
    api.expect.set_options(timeout=30_000)
    return api


@dataclass
class OpenSession:
    page: Any
    session_id: str
    errors: list[str]


@contextmanager
def session_page(data_dir: Path, repo: Path, script: Path, defaults: Settings = DEFAULTS,
                 **create: Any) -> Iterator[OpenSession]:
    """A session made through the API with `create`'s fields, and the page that shows it;
    the page must raise no script error."""
    playwright = require_chromium()
    with live_server(data_dir, defaults=defaults, allowed_roots=[repo.parent]) as base, \
            playwright.sync_playwright() as pw:
        token = TokenStore(data_dir).admin_token
        created = httpx.post(f"{base}/sessions", headers={"Authorization": f"Bearer {token}"},
                             json={"task": "make the tests pass", "repo": str(repo),
                                   "model": f"scripted:{script}", **create})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{base}/#token={token}&session={sid}")
        yield OpenSession(page, sid, errors)
        assert errors == []
        browser.close()
