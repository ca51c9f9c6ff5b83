"""The `[network]` config: what an allow-list entry may say, and who may write one."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from codeloop.cli.render import LiveRenderer
from codeloop.config import ignored_project_keys, load_settings
from codeloop.events import EgressDecided, NetworkHostAllowed, StoredEvent
from codeloop.policy.engine import PolicyEngine
from codeloop.sandbox.egress_rules import AllowList, BadEntry, parse_entry

pytestmark = pytest.mark.security


@pytest.mark.parametrize("text", ["10.0.0.1", "::1", "evil..com", "a b", "*.*.x", "x:0",
                                  "x:70000", "127.1", "2130706433", "ex*ample.org"])
def test_entries_that_are_refused(text: str) -> None:
    with pytest.raises(BadEntry):
        parse_entry(text)


def test_entries_match_their_host_and_ports_only() -> None:
    allow = AllowList(["pypi.org", "*.pythonhosted.org", "registry.test:8443", "127.0.0.1:8080",
                       "[::1]:9000"])
    assert allow.allows("pypi.org", 443) and allow.allows("PyPI.org.", 80)
    assert not allow.allows("pypi.org", 22) and not allow.allows("evilpypi.org", 443)
    assert allow.allows("files.pythonhosted.org", 443)
    assert not allow.allows("pythonhosted.org", 443)  # the wildcard is for subdomains
    assert allow.allows("registry.test", 8443) and not allow.allows("registry.test", 443)
    assert allow.allows("127.0.0.1", 8080) and not allow.allows("127.0.0.1", 8081)
    assert allow.allows("::1", 9000) and not allow.allows("127.0.0.2", 8080)


def test_an_untrusted_repository_cannot_open_the_network(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".codeloop").mkdir(parents=True)
    (repo / ".codeloop" / "config.toml").write_text(
        '[network]\nallow = ["attacker.example"]\nenabled = true\n')
    env = {"CODELOOP_DATA_DIR": str(tmp_path / "data")}
    user = tmp_path / "user.toml"
    user.write_text('[network]\nallow = ["pypi.org"]\n')
    settings = load_settings(repo, env=env, user_file=user)
    assert settings.network.allow == ["pypi.org"]
    assert "network" in ignored_project_keys(repo, env=env, user_file=user)


def test_the_timeline_shows_refusals_and_grants_with_escapes_visible() -> None:
    out = io.StringIO()
    renderer = LiveRenderer(Console(file=out, width=200, force_terminal=False))
    events = [EgressDecided(method="CONNECT", host="evil.test", port=443, allowed=False,
                            reason="host is not on the allow-list"),
              EgressDecided(method="GET", host="ok.test", port=80, allowed=True, reason="x"),
              NetworkHostAllowed(entry="docs.python.org\x1b[2J", reason="docs")]
    for seq, event in enumerate(events, 1):
        renderer.on_event(StoredEvent("s", seq, event))
    text = out.getvalue()
    assert "network refused CONNECT evil.test:443: host is not on the allow-list" in text
    assert "ok.test" not in text  # allowed requests stay in the log only
    assert "\x1b" not in text and "docs.python.org" in text


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "full-auto"])
def test_only_a_person_grants_a_host(tmp_path: Path, mode: str) -> None:
    engine = PolicyEngine.from_config({"approval_mode": mode,
                                       "permissions": {"allow": ["request_network"]}})
    decision = engine.decide("request_network", "network", {"host": "x.org", "reason": "r"},
                             False, tmp_path, "s")
    assert decision.action == ("deny" if mode == "full-auto" else "ask"), decision
