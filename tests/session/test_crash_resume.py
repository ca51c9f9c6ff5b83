"""Kill -9 a scripted session at 50 points, resume each, and compare with an unbroken run."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeloop.session.store import SQLiteEventStore
from tests.session import crash_driver
from tests.session.helpers import make_repo


@dataclass
class Ended:
    returncode: int | None
    output: str


def drive(data: Path, repo: Path, mode: str, kill_at: int = 0) -> Ended:
    """One run or resume in a process of its own, forked from a server that imported the
    driver once (see crash_driver); the returncode is -9 when it killed itself."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.session.crash_driver"])
    out = data.parent / f"{mode}.out"
    proc = ctx.Process(target=crash_driver.drive,
                       args=(data, repo, mode, kill_at, dict(os.environ), out))
    proc.start()
    proc.join(120)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
    return Ended(proc.exitcode, out.read_text() if out.exists() else "")


def check_log(data: Path) -> None:
    events = SQLiteEventStore(data / "events.sqlite").read("s1")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    kinds = [e.event.type for e in events]
    assert kinds.count("session_started") == 1 and kinds.count("session_finished") == 1
    steps = [e.event.step for e in events if e.event.type == "model_call_finished"]  # type: ignore[union-attr]
    assert len(steps) == len(set(steps)), f"a model step was recorded twice: {steps}"
    started = Counter(e.event.call.id for e in events if e.event.type == "tool_call_started")  # type: ignore[union-attr]
    finished = Counter(e.event.call_id for e in events if e.event.type == "tool_call_finished")  # type: ignore[union-attr]
    assert all(n == 1 for n in started.values()), started
    assert all(n == 1 for n in finished.values()), finished
    assert set(started) == set(finished), "a started call has no result"
    calls = [c.id for e in events if e.event.type == "model_call_finished"
             for c in e.event.tool_calls]  # type: ignore[union-attr]
    assert set(calls) == set(finished), "a requested call was lost"


@pytest.mark.slow
def test_kill_at_fifty_points_then_resume(tmp_path: Path) -> None:
    ref_repo = make_repo(tmp_path / "ref")
    ref = drive(tmp_path / "ref" / "data", ref_repo, "start")
    assert ref.returncode == 0, ref.output
    reference = json.loads(ref.output.splitlines()[-1])
    assert reference["status"] == "finished" and "+    return a + b" in reference["diff"]
    total = reference["points"]
    assert total >= 50
    kill_points = sorted({1 + (i * (total - 1)) // 49 for i in range(50)})

    def one(k: int) -> tuple[int, str]:
        base = tmp_path / f"k{k}"
        repo = make_repo(base)
        first = drive(base / "data", repo, "start", kill_at=k)
        assert first.returncode == -9, f"point {k}: not killed ({first.returncode}) {first.output}"
        second = drive(base / "data", repo, "resume")
        assert second.returncode == 0, f"point {k}: resume failed\n{second.output}"
        out = json.loads(second.output.splitlines()[-1])
        assert out["status"] == "finished", f"point {k}: {out['status']}"
        check_log(base / "data")
        return k, out["diff"]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, kill_points))
    assert len(results) == 50
    for k, diff in results:
        assert diff == reference["diff"], f"kill at point {k} gave a different diff"
