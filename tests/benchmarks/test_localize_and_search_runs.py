"""`localize.py` and `search_quality.py` run as a user runs them, on a tiny real repository:
the figures they print and the details a later replay reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from swebench_repos import checkout

from codeloop.index import embeddings

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, tmp_path: Path, *args: str, embed: str = "0") -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                         str(ROOT / "benchmarks")]),
           "CODELOOP_CACHE_DIR": str(tmp_path / "cache"), "CODELOOP_EMBEDDINGS": embed}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


@pytest.mark.parametrize("embed", ["0", "1"])
def test_search_quality_records_lists_a_replay_can_read(
        tiny_suite: tuple[Path, Path, str], tmp_path: Path, embed: str) -> None:
    if embed == "1" and not embeddings.available():
        pytest.skip("the `embeddings` extra is not installed")
    instances, mirrors, _commit = tiny_suite
    details = tmp_path / "search.jsonl"
    # With embeddings on, the benchmark waits for each repository's to be built (a
    # session's search_code would answer from the words until then).
    figures = _run("search_quality.py", tmp_path, "--instances", str(instances),
                   "--mirrors", str(mirrors), "--workdir", str(tmp_path / "w"),
                   "--details", str(details), "--record-signals", embed=embed)
    assert figures["queries"] >= 4 and figures["instances"] == 2
    entries = [json.loads(line) for line in details.read_text().splitlines()]
    assert len(entries) == figures["queries"]
    low, high = figures["hit_at_5_margin_ci95"]
    assert low <= figures["hit_at_5_margin"] <= high
    assert figures["hit_at_5_margin"] == pytest.approx(
        figures["hit_at_5"] - figures["hit_at_5_bm25"], abs=1e-3)
    for entry in entries:
        assert entry["gold"] == ["shop/cart.py"]
        assert entry["signals"]["lists"]["files"], entry["query"]
    # The title query names the function; both rankers find its file first.
    title = next(e for e in entries if e["kind"] == "title")
    assert title["ours"]["rr"] == 1.0 and title["bm25"]["rr"] == 1.0


def test_localize_times_the_ready_build_and_rescores_the_baseline_from_the_mirror(
        tiny_suite: tuple[Path, Path, str], tmp_path: Path) -> None:
    instances, mirrors, _commit = tiny_suite
    details = tmp_path / "localize.jsonl"
    data = ["--instances", str(instances), "--mirrors", str(mirrors), "--no-aider",
            "--workdir", str(tmp_path / "w"), "--details", str(details)]
    run = _run("localize.py", tmp_path, *data)
    assert run["instances"] == 2 and run["recall_at_1"] == 1.0
    assert run["context_build_instances"] == 2 and run["context_build_p95_ms"] > 0
    assert run["recall_at_5_ci95"] == [1.0, 1.0]  # both found: chance moves nothing
    entries = [json.loads(line) for line in details.read_text().splitlines()]
    assert all(e["context_build_ms"] > 0 for e in entries)
    assert all(e["bm25"]["recall_at_1"] == 1.0 for e in entries)

    # A details file whose baseline figures are wrong (an older baseline's, say): the
    # rescore computes them again from the mirror's objects, without a checkout.
    for entry in entries:
        entry["bm25"] = {"recall_at_1": 0.0, "recall_at_5": 0.0, "recall_at_10": 0.0,
                         "mrr": 0.0}
    details.write_text("".join(json.dumps(e) + "\n" for e in entries))
    kept = _run("localize.py", tmp_path, *data, "--summary-only", "--rescore")
    assert kept["baselines"]["bm25"]["recall_at_1"] == 0.0
    again = _run("localize.py", tmp_path, *data, "--summary-only", "--rescore",
                 "--rescore-baselines")
    assert again["baselines"]["bm25"]["recall_at_1"] == 1.0
    assert again["recall_at_1"] == run["recall_at_1"]
    assert again["context_build_instances"] == 2


def test_instance_runs_only_those_and_an_unknown_id_is_refused(
        tiny_suite: tuple[Path, Path, str], tmp_path: Path) -> None:
    instances, mirrors, _commit = tiny_suite
    common = ["--instances", str(instances), "--mirrors", str(mirrors)]
    figures = _run("search_quality.py", tmp_path, *common, "--workdir", str(tmp_path / "w"),
                   "--instance", "acme__shop-2")
    assert figures["instances"] == 1
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                         str(ROOT / "benchmarks")])}
    for script in ("search_quality.py", "localize.py"):
        proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *common,
                               "--workdir", str(tmp_path / "w2"), "--instance", "acme__shop-9"],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert proc.returncode != 0
        assert "--instance acme__shop-9: not among the instances" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_checkout_left_locked_by_a_killed_run_is_cloned_again(
        tiny_suite: tuple[Path, Path, str], tmp_path: Path) -> None:
    _instances, mirrors, commit = tiny_suite
    mirror, work = mirrors / "acme+shop" / "repo", tmp_path / "w" / "acme+shop"
    checkout(mirror, work, commit)
    subprocess.run(["git", "checkout", "-q", "--orphan", "elsewhere"], cwd=work, check=True)
    # What a run killed inside `git checkout` leaves: the lock makes every later checkout fail.
    (work / ".git" / "index.lock").write_text("")
    assert checkout(mirror, work, commit) == work
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert head == commit and (work / "shop" / "cart.py").is_file()
