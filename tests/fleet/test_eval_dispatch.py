"""`codeloop eval run|swebench --ray`: real sessions as Ray tasks on a two-node local cluster,
against the same tasks run here; a worker killed mid-task is retried, then recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codeloop.config import Settings
from codeloop.eval.swebench.evaluate import InstanceResult
from codeloop.eval.swebench.run import SwebenchRun, run_instance
from codeloop.fleet.eval_dispatch import dispatch
from tests.cli.test_cli import kept_settings
from tests.eval.conftest import CALC as SWE_CALC
from tests.eval.conftest import TESTS as SWE_TESTS
from tests.eval.conftest import FakeTask, build_task, fake_specs
from tests.eval.test_suite_run import python_task, shell_task, write_suite
from tests.fleet.ray_nodes import LocalRayCluster

pytestmark = pytest.mark.slow

# Fields that measure time or place, not what the agent and the judge did.
TIMES = {"agent_s", "judge_s", "wall_s", "verify_s", "session_start_s", "node", "lost_attempts",
         "trajectory"}
METRIC_TIMES = {"wall_s", "first_edit_s", "verification_s", "verification_share"}


def codeloop(tmp: Path, *args: str, cluster: LocalRayCluster | None = None
             ) -> subprocess.Popen[str]:
    """The CLI in a process of its own; with `cluster`, holding its token to join it."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "CODELOOP_HOME": str(tmp / "home"),
           "PYTHONPATH": ":".join(sys.path), **(cluster.driver_env if cluster else {}),
           **kept_settings()}
    return subprocess.Popen([sys.executable, "-m", "codeloop", *args], cwd=tmp, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def finished(proc: subprocess.Popen[str], timeout: float = 900) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out


def records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["instance_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    doc = {k: v for k, v in record.items() if k not in TIMES}
    doc["metrics"] = {k: v for k, v in record["metrics"].items() if k not in METRIC_TIMES}
    return doc


def node_ids(cluster: LocalRayCluster) -> set[str]:
    import ray

    return {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def swe_task(tmp: Path) -> FakeTask:
    (tmp / "swe").mkdir()
    return build_task(tmp / "swe", {"calc.py": SWE_CALC, "test_calc.py": SWE_TESTS})


def test_eval_run_on_ray_records_what_the_local_run_records_from_both_nodes(
        ray_cluster: LocalRayCluster, tmp_path: Path) -> None:
    tasks = [python_task(f"py-add-{i}") for i in range(3)] + [shell_task(tmp_path)]
    suite = write_suite(tmp_path, *tasks)
    here = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(tmp_path / "here.jsonl"),
                    "--json")
    finished(here)
    ray = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(tmp_path / "ray.jsonl"),
                   "--json", "--ray", ray_cluster.address, "--workers", "2",
                    cluster=ray_cluster)
    lines = finished(ray).splitlines()
    local, remote = records(tmp_path / "here.jsonl"), records(tmp_path / "ray.jsonl")
    assert set(remote) == {t["id"] for t in tasks}
    assert all(r["outcome"] == "resolved" for r in remote.values()), remote
    for task_id, record in remote.items():
        assert comparable(record) == comparable(local[task_id]), task_id
        assert local[task_id]["node"] == "" and record["lost_attempts"] == []
    # Two at a time on two one-CPU nodes: both nodes ran instances.
    assert {r["node"] for r in remote.values()} == node_ids(ray_cluster)
    assert json.loads(lines[-1])["resolved"] == 4
    # A second run resumes: nothing is left to do, nothing is sent to the cluster.
    again = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(tmp_path / "ray.jsonl"),
                     "--json", "--ray", ray_cluster.address, "--workers", "2",
                     cluster=ray_cluster)
    assert json.loads(finished(again).splitlines()[-1])["skipped"] == 4


def test_eval_swebench_on_ray_makes_the_local_diff(ray_cluster: LocalRayCluster,
                                                   tmp_path: Path) -> None:
    task = swe_task(tmp_path)
    here = SwebenchRun(task.mirrors, "oracle", Settings(), task.env_cache, tmp_path,
                       tmp_path / "here", specs=fake_specs)
    there = replace(here, trajectories=tmp_path / "ray")
    local = here.instance(task.inst, here.evaluation())
    evaluation = there.evaluation()
    (remote,) = dispatch(run_instance, [task.inst], there,
                         lambda inst: there.blank(inst, evaluation), 2)
    diffs = [json.loads(Path(r.trajectory).read_text())["diff"] for r in (local, remote)]
    assert remote.outcome == "resolved" and diffs[0] == diffs[1] and "+    return a + b" in diffs[1]
    assert Path(remote.trajectory).parent == tmp_path / "ray"
    assert comparable(remote.to_json()) == comparable(local.to_json())
    assert remote.node in node_ids(ray_cluster) and local.node == ""


def _raises(item: str, run: None) -> InstanceResult:
    raise ValueError(f"no such task {item}")


def test_an_exception_in_a_task_is_its_record_at_once(ray_cluster: LocalRayCluster) -> None:
    blank = [InstanceResult(i, "r", "", "not_resolved", model="m") for i in ("a", "b")]
    done = {r.instance_id: r for r in dispatch(_raises, ["a", "b"], None,
                                               lambda i: blank[0 if i == "a" else 1], 2)}
    assert set(done) == {"a", "b"}
    assert done["b"].outcome == "env_unavailable" and done["b"].lost_attempts == []
    assert done["b"].reason == "the task raised ValueError: no such task b"


def test_eval_swebench_cli_on_ray_records_each_instance(ray_cluster: LocalRayCluster,
                                                        tmp_path: Path) -> None:
    # The CLI knows only the real recipes, which have none for the made-up repository: the
    # record says so, the same from the cluster as from here.
    task = swe_task(tmp_path)
    common = ["eval", "swebench", "--instances", str(task.jsonl), "--mirrors", str(task.mirrors),
              "--env-cache", str(task.env_cache), "--json"]
    finished(codeloop(tmp_path, *common, "--out", str(tmp_path / "here.jsonl")))
    finished(codeloop(tmp_path, *common, "--out", str(tmp_path / "ray.jsonl"), "--ray",
                      ray_cluster.address, "--workers", "2", cluster=ray_cluster))
    (here,) = records(tmp_path / "here.jsonl").values()
    (ray,) = records(tmp_path / "ray.jsonl").values()
    assert ray["reason"] == "no environment recipe for acme/calc 1.0", ray
    assert comparable(ray) == comparable(here) and ray["node"] in node_ids(ray_cluster)


def test_rebuilding_environments_is_refused_on_a_cluster(tmp_path: Path) -> None:
    task = swe_task(tmp_path)
    common = ["eval", "swebench", "--instances", str(task.jsonl), "--mirrors", str(task.mirrors)]
    proc = codeloop(tmp_path, *common, "--ray", "auto", "--rebuild-envs")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "--rebuild-envs cannot be combined with --ray" in err


def _parent(pid: int) -> tuple[int, int]:
    """(parent pid, process group) of a process, from /proc."""
    stat = (Path("/proc") / str(pid) / "stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[2])


def _ray_worker_running(marker: str, groups: set[int]) -> int | None:
    """The pid of the Ray worker whose descendant's command line holds `marker` (the task
    running that instance's tests), if it belongs to one of our nodes: its parent, the
    node's raylet, is in the process group of a node's `ray start`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            pid = int(entry.name)
            while pid > 1:
                parent, _ = _parent(pid)
                if (Path("/proc") / str(pid) / "cmdline").read_bytes().startswith(b"ray::"):
                    return pid if _parent(parent)[1] in groups else None
                pid = parent
        except OSError:
            continue
    return None


def test_a_killed_worker_s_task_is_retried_once_then_recorded(ray_cluster: LocalRayCluster,
                                                             tmp_path: Path) -> None:
    # The test command names the task, and sleeps long enough for this test to see it.
    def slow(task_id: str) -> dict[str, Any]:
        task = python_task(task_id)
        return {**task, "test_command": f"sleep 1 && : {task_id}-tests && {task['test_command']}"}

    suite = write_suite(tmp_path, slow("killed-once"), slow("killed-always"))
    work = tmp_path / "work"
    work.mkdir()
    proc = codeloop(tmp_path, "eval", "run", str(suite), "--out", str(tmp_path / "ray.jsonl"),
                    "--json", "--ray", ray_cluster.address, "--workers", "2",
                    "--work-dir", str(work), cluster=ray_cluster)
    groups = {node.pid for node in ray_cluster.nodes}
    kills = {"killed-once": 0, "killed-always": 0}
    deadline = time.monotonic() + 900
    while proc.poll() is None and time.monotonic() < deadline:
        for task_id, count in kills.items():
            if task_id == "killed-once" and count:
                continue
            worker = _ray_worker_running(f"{task_id}-tests", groups)
            if worker is not None:
                os.kill(worker, signal.SIGKILL)
                kills[task_id] += 1
        time.sleep(0.05)
    finished(proc, timeout=60)
    got = records(tmp_path / "ray.jsonl")
    assert kills == {"killed-once": 1, "killed-always": 2}
    once, always = got["killed-once"], got["killed-always"]
    assert once["outcome"] == "resolved" and len(once["lost_attempts"]) == 1, once
    assert "WorkerCrashedError" in once["lost_attempts"][0]
    assert always["outcome"] == "env_unavailable" and len(always["lost_attempts"]) == 2
    assert "its Ray worker died 2 times" in always["reason"], always["reason"]
    # The killed workers could not remove their tasks' directories; the run's end did.
    assert sorted(p.name for p in work.iterdir()) == []
