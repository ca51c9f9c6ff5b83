"""Backend choice and `codeloop doctor`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from codeloop.cli.doctor_cmds import register
from codeloop.sandbox import factory
from codeloop.sandbox.bwrap_backend import BwrapSandbox
from codeloop.sandbox.bwrap_profile import namespace_nproc_works
from codeloop.sandbox.errors import SandboxUnavailable
from codeloop.sandbox.probe import Probe, probe
from codeloop.sandbox.subprocess_backend import SubprocessSandbox
from codeloop.workspace.copy import CopyWorkspace


def _workspace(tmp_path: Path) -> CopyWorkspace:
    (tmp_path / "repo").mkdir()
    return CopyWorkspace(tmp_path / "repo", tmp_path / "state")


def test_no_sandbox_gives_the_plain_backend(tmp_path: Path) -> None:
    assert isinstance(factory.make_sandbox(True, _workspace(tmp_path)), SubprocessSandbox)


def test_bwrap_is_the_default_when_probes_pass(tmp_path: Path) -> None:
    if not probe().isolation_available:
        pytest.skip(f"CANNOT EXERCISE: isolation unavailable ({probe().bwrap.detail})")
    assert isinstance(factory.make_sandbox(False, _workspace(tmp_path)), BwrapSandbox)


def test_missing_isolation_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stands for a machine where bwrap cannot start; the real probe result is edited.
    broken = dataclasses.replace(probe(), bwrap=Probe(False, "simulated: no user namespaces"))
    monkeypatch.setattr(factory, "probe", lambda: broken)
    with pytest.raises(SandboxUnavailable) as err:
        factory.make_sandbox(False, _workspace(tmp_path))
    assert "simulated: no user namespaces" in err.value.message
    assert "--no-sandbox" in err.value.hint


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Group mode, so `doctor` is a subcommand as in the real CLI."""

    register(app)
    return app


def test_doctor_json_reports_every_probe() -> None:
    result = CliRunner().invoke(_app(), ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in (
        "bwrap",
        "overlay",
        "seccomp",
        "uid_drop",
        "landlock",
        "cgroups",
        "user_namespaces",
        "caps_dropped",
        "workspace_idmap",
        "memory_limit",
    ):
        assert set(data[key]) == {"ok", "detail"}
    assert data["isolation_available"] == probe().isolation_available
    # A whole-command memory limit is always in force, and says by which mechanism.
    assert data["memory_limit"]["ok"]
    assert any(m in data["memory_limit"]["detail"]
               for m in ("cgroup v2", "cgroup v1", "RSS polling"))
    if probe().cgroup_plan is None:  # and then it says how processes are bounded
        exact = not probe().running_as_root and namespace_nproc_works()
        assert ("processes exactly" in data["memory_limit"]["detail"]) == exact


def test_doctor_table_says_what_is_in_force() -> None:
    result = CliRunner().invoke(_app(), ["doctor"])
    assert result.exit_code == 0, result.output
    assert "seccomp" in result.output
    assert ("in force" in result.output) or ("isolation unavailable" in result.output)
    assert result.output.count("codeloop sandbox capabilities") == 1  # one table
    for row in ("capabilities dropped", "whole-command memory limit", "Docker engine"):
        assert row in result.output
    if probe().isolation_available:
        memory = probe().cgroup_plan.mechanism if probe().cgroup_plan else "RSS polling"
        assert f"memory limit by {memory}" in " ".join(result.output.split())


def test_missing_capability_drop_refuses_isolation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stands for a host where a trial command still held a capability.
    kept = dataclasses.replace(probe(), caps_dropped=Probe(False, "simulated: CapEff=2"))
    assert not kept.isolation_available
    monkeypatch.setattr(factory, "probe", lambda: kept)
    with pytest.raises(SandboxUnavailable) as err:
        factory.make_sandbox(False, _workspace(tmp_path))
    assert "simulated: CapEff=2" in err.value.message
