"""The environment's modules are compiled once, when the builder hands the environment out, and
sandboxed commands of every session load that bytecode instead of compiling from source."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from tests.eval.conftest import FakeTask
from tests.eval.test_agent_pipeline import _events, _task_checkout
from tests.session.helpers import call, scripted, turn

from codeloop.config import Settings
from codeloop.eval.swebench.agent import run_agent
from codeloop.eval.swebench.bytecode import environment_cache
from codeloop.eval.swebench.envs import EnvBuilder
from codeloop.events import ToolCallFinished
from codeloop.sandbox.probe import probe

# An old dependency's module with an invalid escape: compiling it warns, and a suite that
# turns warnings into errors (flask 2.0's `filterwarnings = error`) cannot import it.
OLD_LIB = 'PATTERN = "a\\*b"\n'
IMPORT = "cd / && python -W error -c 'import oldlib; print(\"IMPORTED\", oldlib.PATTERN)'"


def _built_env(fake_task: FakeTask, tmp_path: Path) -> EnvBuilder:
    """A cache holding one environment marked ready whose site-packages has `oldlib`."""
    spec = fake_task.env.spec
    root = tmp_path / "envs" / spec.key
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True)
    purelib = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    (Path(purelib) / "oldlib.py").write_text(OLD_LIB)
    (root / "ready.json").write_text(json.dumps({"interpreter": "test"}))
    return EnvBuilder(tmp_path / "envs")


def test_the_builder_compiles_the_environment_once_outside_the_virtualenv(
        fake_task: FakeTask, tmp_path: Path) -> None:
    builder = _built_env(fake_task, tmp_path)
    env = builder.get(fake_task.env.spec, fake_task.mirror, "", tmp_path)
    compiled = list(environment_cache(env).rglob("oldlib.*.pyc"))
    assert len(compiled) == 1
    # Nothing is written into the virtualenv itself (the sandboxed reinstall may write there).
    assert not list((env.root / "venv").rglob("*.pyc"))
    stamp = compiled[0].stat().st_mtime_ns
    builder.get(fake_task.env.spec, fake_task.mirror, "", tmp_path)
    assert compiled[0].stat().st_mtime_ns == stamp


def test_sandboxed_commands_load_the_environment_bytecode(fake_task: FakeTask,
                                                          tmp_path: Path) -> None:
    if not probe().isolation_available:
        pytest.skip("the session's bytecode cache is a sandbox bind; this needs bwrap")
    env = _built_env(fake_task, tmp_path).get(fake_task.env.spec, fake_task.mirror, "", tmp_path)
    repo = _task_checkout(fake_task, tmp_path)
    model = scripted([turn(call("run", command=IMPORT)), turn(call("finish", summary="ran"))])
    state_dir = tmp_path / "session"
    run = run_agent(fake_task.inst, model, repo, env, state_dir, Settings())

    assert run.note == "", run.note
    output = next(e.output for e in _events(run, state_dir)
                  if isinstance(e, ToolCallFinished) and e.name == "run")
    # Compiled from source in the sandbox, the warning would be a SyntaxError under -W error.
    assert "IMPORTED a\\*b" in output, output
