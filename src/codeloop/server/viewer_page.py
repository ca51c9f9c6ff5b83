"""The trajectory viewer as one self-contained HTML file, the trajectory embedded as JSON."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from pathlib import Path
from typing import Any

STATIC = Path(__file__).parent / "static"
_STYLE_LINK = '<link rel="stylesheet" href="/static/style.css">'
_SCRIPTS = '<script src="/static/dom.js"></script>\n<script src="/static/viewer.js"></script>'
_TITLE = "<title>codeloop trajectory</title>"


def _static(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def embedded_json(doc: Any) -> str:
    """JSON that cannot end or change the <script> element it sits in: `<`, `>` and `&` only
    occur inside JSON strings, where their \\u escapes mean the same characters."""
    text = json.dumps(doc, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def standalone_viewer(doc: dict[str, Any], title: str) -> str:
    """The viewer page with its style, scripts and `doc` inline: it opens from disk, needs no
    server, and its policy lets only its own two scripts run (no network, no other script)."""
    scripts = [_static("dom.js"), _static("viewer.js")]
    csp = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src "
           + " ".join(_hash(s) for s in scripts))
    page = _static("viewer.html")
    page = page.replace(_TITLE, f"<title>{html.escape(title)}</title>")
    page = page.replace(_STYLE_LINK, f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
                                     f"<style>\n{_static('style.css')}</style>")
    data = f'<script id="trajectory" type="application/json">{embedded_json(doc)}</script>\n'
    return page.replace(_SCRIPTS, data + "\n".join(f"<script>{s}</script>" for s in scripts))
