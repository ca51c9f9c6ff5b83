"""Settings layering (defaults < user file < project file < environment < flags) and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.config import load_settings, project_config_path
from codeloop.errors import ConfigError
from codeloop.project_trust import trust


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", 'model = "openai:user"\napproval_mode = "ask"\n'
                 "[budgets]\nmax_steps = 10\nmax_cost_usd = 1.0\n")
    repo = tmp_path / "repo"
    write(repo / ".codeloop" / "config.toml", 'model = "openai:project"\n[budgets]\nmax_steps = 20\n')
    data = tmp_path / "data"
    trust(repo, project_config_path(repo), data)
    env = {"CODELOOP_MODEL": "anthropic:env", "CODELOOP_MAX_COST_USD": "2.5",
           "CODELOOP_DATA_DIR": str(data)}
    s = load_settings(repo, {"budgets": {"max_steps": 30}}, env=env, user_file=user)
    assert s.model == "anthropic:env"
    assert s.budgets.max_steps == 30 and s.budgets.max_cost_usd == 2.5
    assert s.approval_mode == "ask"
    s = load_settings(repo, {}, env={"CODELOOP_DATA_DIR": str(data)}, user_file=user)
    assert s.model == "openai:project" and s.budgets.max_steps == 20
    assert s.budgets.max_cost_usd == 1.0
    assert load_settings(repo, {"model": "openai:flag"}, env=env, user_file=user).model == "openai:flag"


def test_a_bad_value_names_the_key(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "[budgets]\nmax_steps = \"many\"\n")
    with pytest.raises(ConfigError) as info:
        load_settings(None, {}, env={}, user_file=user)
    assert "budgets.max_steps" in info.value.message


def test_a_command_limit_too_small_to_run_anything_names_the_key(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "[limits]\nmemory_mb = 16\nmax_procs = 9\n")
    with pytest.raises(ConfigError) as info:
        load_settings(None, {}, env={}, user_file=user)
    assert "limits.memory_mb" in info.value.message and "256" in info.value.message
    assert "limits.max_procs" in info.value.message


def test_broken_toml_is_a_clear_error(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "model = \n")
    with pytest.raises(ConfigError) as info:
        load_settings(None, {}, env={}, user_file=user)
    assert "user.toml" in info.value.message and "TOML" in info.value.hint
