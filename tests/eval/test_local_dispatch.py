"""`eval/local_dispatch.py`: items in real processes of their own, N at a time; a killed
process is retried once then recorded, an exception is the record at once, nothing is lost,
and two items of one environment do not run together while another could."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import pytest
from tests.eval.conftest import CALC, TESTS, build_task, fake_specs

from codeloop.config import Settings
from codeloop.eval.dispatch import Attempt, take_next
from codeloop.eval.local_dispatch import dispatch_local
from codeloop.eval.swebench.evaluate import InstanceResult
from codeloop.eval.swebench.run import SwebenchRun, run_instance


def _blank(item: str) -> InstanceResult:
    return InstanceResult(item, "r", "", "not_resolved", model="m")


def _done(item: str) -> InstanceResult:
    result = _blank(item)
    result.outcome = "resolved"
    return result


def _attempts(run: Path, item: str) -> int:
    """Counts this attempt of `item` in a file under `run` and returns how many came before."""
    marker = run / f"{item}.attempts"
    before = len(marker.read_text()) if marker.exists() else 0
    marker.write_text("x" * (before + 1))
    return before


def _dies(item: str, run: Path) -> InstanceResult:
    # "once" dies on its first attempt only, "always" on every one; others finish.
    before = _attempts(run, item)
    if item == "always" or (item == "once" and before == 0):
        os.kill(os.getpid(), signal.SIGKILL)
    return _done(item)


def test_a_killed_process_is_retried_once_then_recorded(tmp_path: Path) -> None:
    got = {r.instance_id: r for r in dispatch_local(_dies, ["once", "always", "fine"], tmp_path,
                                                     _blank, 2)}
    assert set(got) == {"once", "always", "fine"}
    once, always, fine = got["once"], got["always"], got["fine"]
    assert once.outcome == "resolved" and once.lost_attempts == [
        "the worker process was killed by SIGKILL"]
    assert always.outcome == "env_unavailable" and len(always.lost_attempts) == 2
    assert always.reason == ("its worker process died 2 times; the last: the worker process "
                             "was killed by SIGKILL")
    assert fine.outcome == "resolved" and fine.lost_attempts == []
    counts = {i: len((tmp_path / f"{i}.attempts").read_text()) for i in got}
    assert counts == {"once": 2, "always": 2, "fine": 1}


def _raises(item: str, run: Path) -> InstanceResult:
    _attempts(run, item)
    if item == "b":
        raise ValueError(f"no such task {item}")
    return _done(item)


def test_an_exception_in_an_item_is_its_record_at_once(tmp_path: Path) -> None:
    got = {r.instance_id: r for r in dispatch_local(_raises, ["a", "b"], tmp_path, _blank, 2)}
    assert got["a"].outcome == "resolved"
    assert got["b"].outcome == "env_unavailable" and got["b"].lost_attempts == []
    assert got["b"].reason == "the task raised ValueError: no such task b"
    assert (tmp_path / "b.attempts").read_text() == "x"  # not run again


def _large(item: str, run: None) -> InstanceResult:
    result = _done(item)
    result.judge_tail = item * 2_000_000  # far past a pipe's buffer
    return result


def test_a_record_larger_than_the_pipe_arrives_whole() -> None:
    (got,) = dispatch_local(_large, ["z"], None, _blank, 2)
    assert got.judge_tail == "z" * 2_000_000


def _timed(item: str, run: Path) -> InstanceResult:
    start = time.monotonic()
    time.sleep({"a1": 1.0, "a2": 0.2, "b1": 2.5}[item])
    (run / f"{item}.span").write_text(json.dumps([start, time.monotonic()]))
    return _done(item)


def test_items_of_one_environment_wait_while_another_can_run(tmp_path: Path) -> None:
    items = ["a1", "a2", "b1"]
    done = [r.instance_id for r in dispatch_local(_timed, items, tmp_path, _blank, 2,
                                                   key=lambda item: item[0])]
    assert sorted(done) == items
    span = {i: json.loads((tmp_path / f"{i}.span").read_text()) for i in items}
    # a1 and b1 started together; a2 only once a1 had ended, though it was queued before b1.
    assert span["a2"][0] >= span["a1"][1]
    assert span["b1"][0] < span["a1"][1]


def test_take_next_prefers_a_free_key_and_falls_back_to_the_first() -> None:
    queue = deque(Attempt(i) for i in ["a1", "a2", "b1", "b2"])
    first = lambda item: item[0]  # noqa: E731
    assert take_next(queue, {"a"}, first).item == "b1"
    assert [a.item for a in queue] == ["a1", "a2", "b2"]
    assert take_next(queue, {"a", "b"}, first).item == "a1"  # every key busy: the first
    assert take_next(queue, {"a"}, None).item == "a2"  # no key: the queue's order


def _sleeps(item: str, run: Path) -> InstanceResult:
    if item == "slow":
        (run / "slow.pid").write_text(str(os.getpid()))
        time.sleep(120)
    return _done(item)


def test_stopping_early_kills_what_is_still_running(tmp_path: Path) -> None:
    records = dispatch_local(_sleeps, ["slow", "quick"], tmp_path, _blank, 2)
    assert next(records).instance_id == "quick"
    pid = int((tmp_path / "slow.pid").read_text())
    records.close()  # what Ctrl-C or an error writing the records does to the generator
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.slow
def test_swebench_instances_in_local_processes_make_the_diff_run_here_makes(
        tmp_path: Path) -> None:
    (tmp_path / "swe").mkdir()
    task = build_task(tmp_path / "swe", {"calc.py": CALC, "test_calc.py": TESTS})
    here = SwebenchRun(task.mirrors, "oracle", Settings(), task.env_cache, tmp_path,
                       tmp_path / "here", specs=fake_specs)
    local = here.instance(task.inst, here.evaluation())
    apart = SwebenchRun(task.mirrors, "oracle", Settings(), task.env_cache, tmp_path,
                        tmp_path / "apart", specs=fake_specs)
    evaluation = apart.evaluation()
    (remote,) = dispatch_local(run_instance, [task.inst], apart,
                               lambda inst: apart.blank(inst, evaluation), 2)
    diffs = [json.loads(Path(r.trajectory).read_text())["diff"] for r in (local, remote)]
    assert remote.outcome == local.outcome == "resolved"
    assert diffs[0] == diffs[1] and "+    return a + b" in diffs[1]
    assert remote.steps == local.steps and remote.metrics["tools"] == local.metrics["tools"]


@pytest.mark.slow
def test_eval_swebench_takes_workers_without_a_cluster(tmp_path: Path) -> None:
    (tmp_path / "swe").mkdir()
    task = build_task(tmp_path / "swe", {"calc.py": CALC, "test_calc.py": TESTS})
    common = [sys.executable, "-m", "codeloop", "eval", "swebench", "--instances",
              str(task.jsonl), "--mirrors", str(task.mirrors), "--env-cache",
              str(task.env_cache), "--json"]
    env = {**os.environ, "HOME": str(tmp_path), "CODELOOP_HOME": str(tmp_path / "home")}
    one = subprocess.run([*common, "--out", str(tmp_path / "one.jsonl")], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    two = subprocess.run([*common, "--out", str(tmp_path / "two.jsonl"), "--workers", "2"],
                         env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert one.returncode == 0 and two.returncode == 0, two.stderr[-2000:]
    # The CLI knows only the real recipes, which have none for the made-up repository: the
    # record says so, the same from a worker process as from here.
    (rec_one,) = map(json.loads, (tmp_path / "one.jsonl").read_text().splitlines())
    (rec_two,) = map(json.loads, (tmp_path / "two.jsonl").read_text().splitlines())
    assert rec_two["reason"] == rec_one["reason"] == "no environment recipe for acme/calc 1.0"
    refused = subprocess.run([*common, "--workers", "2", "--rebuild-envs"], env=env,
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode != 0
    assert "--rebuild-envs cannot be combined with --ray or --workers" in refused.stderr
