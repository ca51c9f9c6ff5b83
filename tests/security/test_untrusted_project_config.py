"""SECURITY.md class (45): the repository's own `.codeloop/config.toml` is untrusted text.

Loaded through the real config loader, it may tighten a limit but never loosen one: budgets,
timeouts, retries, the sandbox, the approval mode and the verifier's gate and commands keep
the user's values (or the defaults), and `codeloop` names each key it ignored.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from codeloop.cli.trust_cmds import notice_untrusted
from codeloop.config import Settings, ignored_project_keys, load_settings, project_config_path
from codeloop.project_trust import VERIFY_KEYS
from codeloop.verify.settings import VerifySettings

pytestmark = pytest.mark.security

BUDGETS = ("max_steps", "max_cost_usd", "max_tokens", "wall_clock_s", "command_timeout_s")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"CODELOOP_DATA_DIR": str(tmp_path / "data")}


def untrusted_repo(tmp_path: Path, text: str) -> Path:
    repo = tmp_path / "repo"
    (repo / ".codeloop").mkdir(parents=True, exist_ok=True)
    project_config_path(repo).write_text(text)
    return repo


@pytest.mark.parametrize("value", ["0", "-1", '"0"', "0.0", "-0.0", "true", "[]"])
def test_an_untrusted_budget_cannot_switch_a_limit_off(tmp_path: Path, env: dict[str, str],
                                                       value: str) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[budgets]\nmax_steps = 30\n")
    repo = untrusted_repo(tmp_path, "[budgets]\n" + "".join(f"{b} = {value}\n" for b in BUDGETS))
    settings = load_settings(repo, {}, env=env, user_file=user)
    defaults = Settings().budgets
    assert settings.budgets.max_steps == 30
    for name in BUDGETS[1:]:
        assert getattr(settings.budgets, name) == getattr(defaults, name)
    assert set(ignored_project_keys(repo, env, user)) == {f"budgets.{b}" for b in BUDGETS}


def test_switches_timeouts_and_verify_limits_cannot_be_loosened(tmp_path: Path,
                                                                env: dict[str, str]) -> None:
    user = tmp_path / "user.toml"
    user.write_text('approval_mode = "auto-edit"\n[verify]\ntest_timeout_s = 600.0\n'
                    'block_on = ["test", "error"]\ntest = "make check"\n')
    repo = untrusted_repo(tmp_path, """
request_timeout_s = 0
max_retries = -1
context_window = 0
max_output_tokens = -5
sandbox = false
verify_on_finish = "false"
approval_mode = "full-auto"
[budgets]
command_timeout_s = 0
warn_fraction = 0
max_tokens = inf
wall_clock_s = nan
[verify]
test_timeout_s = 0
time_budget_s = 1e9
block_on = []
block_on_security = false
test = "true"
lint = ["ruff check ."]
""")
    s = load_settings(repo, {}, env=env, user_file=user)
    d = Settings()
    assert (s.request_timeout_s, s.max_retries, s.context_window, s.max_output_tokens) == (
        d.request_timeout_s, d.max_retries, d.context_window, d.max_output_tokens)
    assert s.sandbox is True and s.verify_on_finish is True and s.approval_mode == "auto-edit"
    assert s.budgets == d.budgets
    # The verifier gets the user's limits and gate, the user's test command, and the
    # project's linter (which the user left to detection).
    assert s.verify == {"test_timeout_s": 600.0, "block_on": ["test", "error"],
                        "test": "make check", "lint": ["ruff check ."]}
    ignored = ignored_project_keys(repo, env, user)
    assert set(ignored) == {
        "request_timeout_s", "max_retries", "context_window", "max_output_tokens", "sandbox",
        "verify_on_finish", "approval_mode", "budgets.command_timeout_s",
        "budgets.warn_fraction", "budgets.max_tokens", "budgets.wall_clock_s", "verify.test_timeout_s", "verify.time_budget_s",
        "verify.block_on", "verify.block_on_security", "verify.test"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODELOOP_DATA_DIR", env["CODELOOP_DATA_DIR"])
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-user-config"))
        shown = io.StringIO()
        notice_untrusted(repo, Console(file=shown, width=1000))
    assert "not trusted" in shown.getvalue() and "budgets.command_timeout_s" in shown.getvalue()


def test_every_verify_setting_is_screened() -> None:
    """A verifier setting added later must be classified, not pass through unscreened."""
    assert set(VerifySettings.model_fields) == VERIFY_KEYS


def test_positive_limits_still_tighten_even_an_unlimited_one(tmp_path: Path,
                                                             env: dict[str, str]) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[budgets]\nmax_steps = 0\nmax_cost_usd = 0\n[verify]\ntest_timeout_s = 600\n")
    repo = untrusted_repo(tmp_path, "max_retries = 0\nrequest_timeout_s = 30\n[budgets]\n"
                          "max_steps = 12\nmax_cost_usd = 0.5\n[verify]\ntest_timeout_s = 60\n")
    s = load_settings(repo, {}, env=env, user_file=user)
    assert (s.budgets.max_steps, s.budgets.max_cost_usd) == (12, 0.5)
    assert (s.max_retries, s.request_timeout_s, s.verify["test_timeout_s"]) == (0, 30, 60)
    assert ignored_project_keys(repo, env, user) == []
