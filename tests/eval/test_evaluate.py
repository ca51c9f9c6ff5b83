"""End to end on the fake task: the oracle through the real runner, then the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.test_cli import cli
from tests.eval.conftest import FakeTask, fake_specs
from tests.eval.scratch_helpers import dead_pid, orphans

from codeloop.config import Settings
from codeloop.eval.swebench.evaluate import (
    Evaluation,
    InstanceResult,
    model_factory,
    summarize,
    trajectory_name,
)
from codeloop.eval.swebench.harness import Bench


def _evaluate(task: FakeTask, model: str, tmp_path: Path,
              settings: Settings | None = None) -> InstanceResult:
    bench = Bench(task.mirrors, task.env_cache, specs=fake_specs, work_dir=tmp_path)
    settings = settings or Settings()
    evaluation = Evaluation(bench, model_factory(model, settings), settings, tmp_path,
                            trajectories=tmp_path / "traj")
    return evaluation.one(task.inst)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["oracle", "oracle-perturbed"])
def test_oracle_resolves_through_the_runner(fake_task: FakeTask, tmp_path: Path,
                                           model: str) -> None:
    left = orphans(tmp_path, dead_pid())  # what a run killed mid-instance left
    result = _evaluate(fake_task, model, tmp_path)
    assert result.outcome == "resolved", result.reason
    # The checkout, session, environment build and judge directories are gone, and so are
    # those of the killed run.
    assert not any(path.exists() for path in left)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("codeloop-")] == []
    assert result.model == model and result.session_status == "finished"
    assert result.edits >= 1 and result.tool_calls >= 3 and result.steps >= 3
    assert result.diff_lines > 0
    # The session's scratch directory is gone; its trajectory is kept.
    doc = json.loads(Path(result.trajectory).read_text())
    assert Path(result.trajectory).name == f"{fake_task.inst.instance_id}.{model}.json"
    assert doc["format"].startswith("codeloop-trajectory/") and doc["session"]["status"] == "finished"
    assert doc["diff"] and doc["diff"].count("\n") == result.diff_lines
    assert any(e["type"] == "tool_call_finished" and e["name"] == "finish" for e in doc["events"])


@pytest.mark.slow
def test_oracle_resolves_with_the_plan_and_review_phases(fake_task: FakeTask,
                                                       tmp_path: Path) -> None:
    roles = Settings.model_validate({"roles": {"enabled": True}})
    result = _evaluate(fake_task, "oracle-perturbed", tmp_path, roles)
    assert result.outcome == "resolved" and result.session_status == "finished", result.reason
    doc = json.loads(Path(result.trajectory).read_text())
    kinds = [e["type"] for e in doc["events"]]
    assert "plan_proposed" in kinds and "review_requested" in kinds
    verdicts = [e["verdict"] for e in doc["events"] if e["type"] == "review_given"]
    assert verdicts == ["approve"]
    roles_seen = {e["role"] for e in doc["events"] if e["type"] == "model_call_finished"}
    assert roles_seen == {"planner", "coder", "reviewer"}


@pytest.mark.slow
def test_the_oracle_gets_the_steps_its_patch_needs(fake_task: FakeTask, tmp_path: Path) -> None:
    # Four steps cannot hold a search, a read, an edit, a test run and a finish; sympy-18033's
    # gold patch has 88 hunks against a default budget of 50 steps.
    tight = Settings.model_validate({"budgets": {"max_steps": 4}})
    result = _evaluate(fake_task, "oracle", tmp_path, tight)
    assert result.outcome == "resolved" and result.session_status == "finished", result.reason
    assert result.steps > 4


def test_trajectory_names_are_file_names() -> None:
    assert trajectory_name("acme__calc-1", "openai:gpt-4o/mini") == "acme__calc-1.openai_gpt-4o_mini.json"


def test_missing_environment_is_reported_with_its_reason(fake_task: FakeTask,
                                                         tmp_path: Path) -> None:
    inst = fake_task.inst.model_copy(update={"version": "9.9", "instance_id": "acme__calc-2"})
    bench = Bench(fake_task.mirrors, tmp_path / "envs", work_dir=tmp_path)
    result = Evaluation(bench, model_factory("oracle-perturbed", Settings()), Settings()).one(inst)
    assert result.outcome == "env_unavailable"
    assert "no environment recipe for acme/calc 9.9" in result.reason
    assert result.model == "oracle-perturbed"  # no session ran, yet the record names its model


def test_an_instance_with_nothing_to_judge_builds_no_environment(fake_task: FakeTask,
                                                                 tmp_path: Path) -> None:
    # Version 9.9 has no recipe: had an environment been attempted, that would be the reason.
    inst = fake_task.inst.model_copy(update={"version": "9.9", "FAIL_TO_PASS": []})
    bench = Bench(fake_task.mirrors, tmp_path / "envs", work_dir=tmp_path)
    evaluation = Evaluation(bench, model_factory("oracle", Settings()), Settings())
    for result, model in ((evaluation.one(inst), "oracle"), (evaluation.check(inst), "gold")):
        assert result.outcome == "env_unavailable" and result.model == model
        assert result.reason == "environment check failed: the instance lists no FAIL_TO_PASS tests"
    assert not (tmp_path / "envs").exists() or not any((tmp_path / "envs").iterdir())


def test_summary_counts_only_built_environments() -> None:
    rows = [InstanceResult("a", "r", "1", "resolved"), InstanceResult("b", "r", "1", "resolved"),
            InstanceResult("c", "r", "1", "not_resolved"),
            InstanceResult("d", "r", "1", "env_unavailable", reason="no python")]
    assert summarize(rows) == {"instances": 4, "resolved": 2, "not_resolved": 1,
                               "env_unavailable": 1, "resolved_pct": 66.7}


def test_eval_swebench_appends_to_out_and_a_rerun_skips_what_it_recorded(
        fake_task: FakeTask, tmp_path: Path) -> None:
    # --out was opened for writing: a rerun with the same file threw away the earlier records.
    out = tmp_path / "run.jsonl"
    earlier = json.dumps({"instance_id": "acme__calc-0", "repo": "acme/calc",
                          "outcome": "resolved", "model": "oracle"})
    out.write_text(earlier + "\n")
    args = ("eval", "swebench", "--instances", str(fake_task.jsonl), "--mirrors",
            str(fake_task.mirrors), "--env-cache", str(tmp_path / "envs"), "--model", "oracle",
            "--out", str(out), "--json")
    first = cli(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == earlier and len(lines) == 2, lines
    # acme/calc has no recipe in the table, so the CLI records it as unavailable (offline).
    record = json.loads(lines[1])
    assert (record["instance_id"], record["model"]) == ("acme__calc-1", "oracle")
    again = cli(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["skipped"] == 1
    assert out.read_text().splitlines() == lines
