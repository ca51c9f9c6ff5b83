"""`codeloop eval report | compare | gate` on the recorded sympy runs in docs/results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeloop.eval.compare import bootstrap_grouped_mean, bootstrap_mean, compare, mcnemar_exact
from codeloop.eval.records import RecordsError, load_run

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "docs/results/swebench-sympy.oracle.jsonl"
PERTURBED = ROOT / "docs/results/swebench-sympy.oracle-perturbed.jsonl"


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def codeloop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=120)


def _doctored(tmp: Path, flip: int, cost: float) -> Path:
    """The oracle run with its first `flip` resolved instances unresolved and a cost each."""
    rows = _raw(ORACLE)
    flipped = 0
    for row in rows:
        if row["outcome"] == "resolved" and flipped < flip:
            row["outcome"], flipped = "not_resolved", flipped + 1
        row["cost_usd"] = cost
    path = tmp / "doctored.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_report_numbers_match_the_records(tmp_path: Path) -> None:
    rows = _raw(ORACLE)
    judged = [r for r in rows if r["outcome"] in ("resolved", "not_resolved")]
    out = tmp_path / "rep"
    done = codeloop("eval", "report", str(ORACLE), "--out", str(out), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["instances"] == len(rows) == 123
    assert figures["judged"] == len(judged)
    assert figures["resolved"] == sum(r["outcome"] == "resolved" for r in rows)
    assert figures["not_judged"] == len(rows) - len(judged)
    page = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    assert f"<td>{figures['resolved']}</td>" in page and "sympy/sympy" in page
    assert page.count("data:image/png;base64,") == 5
    assert f"**{figures['resolved']}/{figures['judged']}**" in md
    # Every instance is listed, with its outcome.
    for row in rows:
        assert row["instance_id"] in page


def test_compare_the_recorded_runs(tmp_path: Path) -> None:
    done = codeloop("eval", "compare", str(ORACLE), str(PERTURBED), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    both = {r["instance_id"] for r in _raw(ORACLE) if r["outcome"] != "env_unavailable"} & \
        {r["instance_id"] for r in _raw(PERTURBED) if r["outcome"] != "env_unavailable"}
    assert result["paired"] == len(both)
    assert result["flipped_to_resolved"] == [] and result["flipped_to_unresolved"] == []
    assert result["mcnemar_p"] == 1.0 and result["significant"] is False


def test_compare_finds_the_flips_and_says_they_are_real(tmp_path: Path) -> None:
    doctored = _doctored(tmp_path, flip=12, cost=0.5)
    result = compare(load_run(ORACLE), load_run(doctored))
    assert len(result.only_a) == 12 and result.only_b == []
    assert result.mcnemar_p == pytest.approx(2 * 0.5 ** 12, rel=1e-3)
    assert result.significant
    assert result.cost_diff.mean == pytest.approx(0.5)
    done = codeloop("eval", "compare", str(ORACLE), str(doctored), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "a real difference" in done.stdout and "no longer resolved" in done.stdout


def test_gate_passes_on_the_same_run_and_fails_on_a_regression(tmp_path: Path) -> None:
    same = codeloop("eval", "gate", str(PERTURBED), "--baseline", str(ORACLE), cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "gate passed" in same.stdout
    worse = _doctored(tmp_path, flip=1, cost=0.0)
    failed = codeloop("eval", "gate", str(worse), "--baseline", str(ORACLE), "--json",
                      cwd=tmp_path)
    assert failed.returncode == 1
    verdict = json.loads(failed.stdout)
    assert verdict["passed"] is False and "resolved dropped by 1" in verdict["failures"][0]
    allowed = codeloop("eval", "gate", str(worse), "--baseline", str(ORACLE),
                       "--max-resolved-drop", "1", cwd=tmp_path)
    assert allowed.returncode == 0


def test_gate_fails_when_cost_rises(tmp_path: Path) -> None:
    cheap, dear = tmp_path / "a", tmp_path / "b"
    cheap.mkdir()
    dear.mkdir()
    base = _doctored(cheap, flip=0, cost=0.10)
    run = _doctored(dear, flip=0, cost=0.12)
    failed = codeloop("eval", "gate", str(run), "--baseline", str(base), cwd=tmp_path)
    assert failed.returncode == 1 and "mean cost rose 20%" in failed.stdout


def test_statistics_helpers() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 6) == pytest.approx(2 * 0.5 ** 6)
    iv = bootstrap_mean([1.0, 2.0, 3.0, 4.0])
    assert iv.mean == 2.5 and 1.0 <= iv.low < 2.5 < iv.high <= 4.0
    assert bootstrap_mean([1.0, 2.0, 3.0, 4.0]) == iv  # seeded: the same interval each time
    # Two groups of ten alike values: resampling groups sees two observations, not twenty.
    grouped = bootstrap_grouped_mean([[1.0] * 10, [0.0] * 10])
    flat = bootstrap_mean([1.0] * 10 + [0.0] * 10)
    assert grouped.mean == flat.mean == 0.5
    assert grouped.high - grouped.low > 2 * (flat.high - flat.low)
    assert bootstrap_grouped_mean([[1.0, 3.0], [2.0]]).mean == 2.0  # every value weighs alike


def test_bad_records_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RecordsError, match="no such file"):
        load_run(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "x", "outcome": "resolved"}\nnot json\n')
    with pytest.raises(RecordsError, match=r"bad\.jsonl:2: not JSON"):
        load_run(bad)
    done = codeloop("eval", "report", str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert done.returncode != 0 and "no such file" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_swebench_needs_its_paths(tmp_path: Path) -> None:
    done = codeloop("eval", "swebench", "--mirrors", str(tmp_path), cwd=tmp_path)
    assert done.returncode != 0 and "--instances" in done.stderr + done.stdout
    done = codeloop("eval", "swebench", "--instances", str(tmp_path / "i.jsonl"), cwd=tmp_path)
    assert done.returncode != 0 and "--mirrors" in done.stderr + done.stdout


ROLES = [ROOT / f"docs/results/swebench-roles.{m}.jsonl" for m in ("oracle", "oracle-perturbed")]


def test_recorded_runs_with_metrics_report_and_compare(tmp_path: Path) -> None:
    # The roles runs' records carry the trajectory metrics from the event log; the report's
    # figures and the paired comparison must agree with them.
    runs = [_raw(p) for p in ROLES]
    for rows in runs:
        judged = [r for r in rows if r["outcome"] in ("resolved", "not_resolved")]
        assert judged and all(r["metrics"] for r in judged)
        for r in judged:
            m = r["metrics"]
            assert m["steps"] == r["steps"] and m["cost_usd"] == r["cost_usd"]
            assert m["model_calls"] >= 1 and m["tool_calls"] >= 1 and m["verification_runs"] >= 1
            assert {"planner", "coder"} <= set(m["by_role"])
    done = codeloop("eval", "report", str(ROLES[0]), "--out", str(tmp_path / "rep"), "--json",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    judged = [r for r in runs[0] if r["outcome"] in ("resolved", "not_resolved")]
    steps = sorted(r["metrics"]["steps"] for r in judged)
    assert figures["judged"] == len(judged) and figures["resolved"] == len(judged)
    assert figures["steps_median"] == pytest.approx(
        (steps[(len(steps) - 1) // 2] + steps[len(steps) // 2]) / 2)
    done = codeloop("eval", "compare", *map(str, ROLES), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # The perturbed run may cover fewer instances than the oracle run: pairs are those both judged.
    both = set.intersection(*({r["instance_id"] for r in rows
                               if r["outcome"] in ("resolved", "not_resolved")} for rows in runs))
    assert result["paired"] == len(both) >= 1
    assert result["flipped_to_resolved"] == [] and result["flipped_to_unresolved"] == []


def test_every_judged_sympy_record_carries_its_metrics(tmp_path: Path) -> None:
    # The sympy runs were run again for their trajectory metrics (docs/benchmarks.md): every
    # judged record has them, they agree with the record, and the report's figures with them.
    for path in (ORACLE, PERTURBED):
        rows = _raw(path)
        judged = [r for r in rows if r["outcome"] in ("resolved", "not_resolved")]
        assert len(judged) == 106 and all(r["metrics"] for r in judged), path.name
        for r in judged:
            m = r["metrics"]
            assert m["steps"] == r["steps"] and m["tool_calls"] == r["tool_calls"], r["instance_id"]
            assert m["model_calls"] >= 1 and m["verification_runs"] >= 1, r["instance_id"]
            assert m["exploration"]["recall"] > 0 or r["instance_id"] == "sympy__sympy-18198"
        done = codeloop("eval", "report", str(path), "--out", str(tmp_path / path.stem), "--json",
                        cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        steps = sorted(r["metrics"]["steps"] for r in judged)
        assert json.loads(done.stdout)["steps_median"] == pytest.approx(
            (steps[(len(steps) - 1) // 2] + steps[len(steps) // 2]) / 2)
