from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from tests.eval.conftest import CALC, GOLD, SPEC, TESTS, FakeTask, _diff, build_task, fake_specs

from codeloop.eval.swebench.harness import Bench, Validation
from codeloop.eval.swebench.judge import Verdict, grade, judge
from codeloop.sandbox.probe import probe
from codeloop.verify.settings import TEST_SEED


def test_gold_resolves_and_no_patch_does_not(fake_task: FakeTask) -> None:
    t = fake_task
    gold = judge(t.inst, t.env, t.mirror, t.inst.patch)
    assert gold.resolved, gold.output_tail
    assert gold.statuses["test_calc.py::test_add"] == "PASSED"
    empty = judge(t.inst, t.env, t.mirror, "")
    assert not empty.resolved
    assert empty.f2p_failing == ["test_calc.py::test_add"] and not empty.p2p_failing


def test_a_diff_that_breaks_a_passing_test_is_not_resolved(fake_task: FakeTask) -> None:
    t = fake_task
    breaks_sub = t.inst.patch.replace("@@ -2,7 +2,7 @@", "@@ -2,10 +2,10 @@").replace(
        " def sub(a, b):\n", " def sub(a, b):\n-    return a - b\n+    return b - a\n \n \n")
    verdict = judge(t.inst, t.env, t.mirror, breaks_sub)
    assert not verdict.resolved
    assert verdict.p2p_failing == ["test_calc.py::test_sub"]
    rejected = judge(t.inst, t.env, t.mirror, "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n")
    assert not rejected.resolved and "does not apply" in rejected.reason


def test_validation_is_cached_with_the_environment(fake_task: FakeTask) -> None:
    bench = Bench(fake_task.mirrors, fake_task.env_cache, specs=fake_specs)
    env = bench.environment(fake_task.inst)
    first = bench.validate(fake_task.inst, env)
    assert first.ok and first.excluded == []
    assert (env.root / "validated" / "acme__calc-1.json").is_file()
    assert bench.validate(fake_task.inst, env) == first


def test_network_failures_are_excluded_and_all_network_f2p_is_unjudgeable(
    fake_task: FakeTask,
) -> None:
    inst = fake_task.inst
    gold = Verdict(False, statuses={"test_calc.py::test_add": "PASSED",
                                    "test_calc.py::test_sub": "FAILED"},
                   network={"test_calc.py::test_sub"})
    empty = Verdict(False, statuses={"test_calc.py::test_add": "FAILED"})
    check = Validation.from_runs(inst, gold, empty)
    assert check.ok and check.excluded == ["test_calc.py::test_sub"]
    assert grade(inst, empty.statuses, frozenset(check.excluded)).f2p_failing == [
        "test_calc.py::test_add"]
    gold_net = Verdict(False, statuses={"test_calc.py::test_sub": "PASSED"},
                       network={"test_calc.py::test_add"})
    check = Validation.from_runs(inst, gold_net, empty)
    assert not check.ok and "network" in check.problem
    same = Validation.from_runs(inst, Verdict(True, statuses=dict.fromkeys(
        ["test_calc.py::test_add", "test_calc.py::test_sub"], "PASSED")), Verdict(
        True, statuses=dict.fromkeys(["test_calc.py::test_add", "test_calc.py::test_sub"],
                                     "PASSED")))
    assert not same.ok and "without any change" in same.problem


def test_pass_to_pass_tests_failing_with_gold_are_environment_facts(fake_task: FakeTask) -> None:
    p2p = [f"t.py::p{n}" for n in range(4)]
    inst = fake_task.inst.model_copy(update={"PASS_TO_PASS": p2p})
    statuses = dict.fromkeys([*p2p, "test_calc.py::test_add"], "PASSED")
    empty = Verdict(False, statuses=statuses | {"test_calc.py::test_add": "FAILED"})
    one_broken = Validation.from_runs(inst, Verdict(False, statuses=statuses | {"t.py::p3": "ERROR"}),
                                      empty)
    assert one_broken.ok and one_broken.excluded == ["t.py::p3"]
    most_broken = Validation.from_runs(
        inst, Verdict(False, statuses=statuses | dict.fromkeys(p2p[:3], "FAILED")), empty)
    assert not most_broken.ok and "3 of 4 PASS_TO_PASS" in most_broken.problem


def _escaping_diff(marker: Path) -> str:
    """The gold fix, plus a line in the fixed function that writes `marker` on the host."""
    return GOLD.replace(
        "+    return a + b\n",
        f"+    import os; os.makedirs({str(marker.parent)!r}, exist_ok=True)\n"
        f"+    open({str(marker)!r}, 'w').write('escaped')\n"
        "+    return a + b\n").replace("@@ -2,7 +2,7 @@", "@@ -2,7 +2,9 @@")


def test_the_diff_runs_in_the_sandbox_and_cannot_write_to_the_host(
    fake_task: FakeTask, tmp_path: Path,
) -> None:
    if not probe().isolation_available:
        pytest.skip(f"CANNOT EXERCISE: isolation unavailable ({probe().bwrap.detail})")
    t = fake_task
    marker = tmp_path / "outside" / "marker.txt"
    boxed = judge(t.inst, t.env, t.mirror, _escaping_diff(marker))
    assert boxed.resolved and boxed.sandbox == "bwrap", boxed.output_tail
    assert not marker.exists()
    # The same diff judged with the sandbox off does write there: the check above can fail.
    plain = judge(t.inst, t.env, t.mirror, _escaping_diff(marker), sandboxed=False)
    assert plain.resolved and plain.sandbox == "none: the sandbox is off"
    assert marker.read_text() == "escaped"


# The fix takes its value from a module the package's install step writes into the
# virtualenv, so the tests pass only if that install ran before them.
_SETUP = 'print("nothing to install")\n'
_PLANTING_DIFF = _diff("""diff --git a/setup.py b/setup.py
--- a/setup.py
+++ b/setup.py
@@ -1 +1,3 @@
-print("nothing to install")
+import sysconfig
+with open(sysconfig.get_paths()["purelib"] + "/planted.py", "w") as f:
+    f.write("def add(a, b):\\n    return a + b\\n")
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,8 +1,6 @@
 \"\"\"A calculator with a bug in add.\"\"\"
~
~
-def add(a, b):
-    return a - b
-
+from planted import add
~
 def sub(a, b):
""")


def test_a_packaging_diff_installs_for_its_own_tests_only(tmp_path: Path) -> None:
    """An untrusted setup.py runs in the sandbox against an overlay of the shared
    virtualenv: what it installs is there for the judged tests and gone afterwards."""
    if not probe().isolation_available or not probe().overlay.ok:
        pytest.skip(f"CANNOT EXERCISE: isolation or overlay unavailable ({probe().overlay.detail})")
    spec = dataclasses.replace(SPEC, install="python setup.py")
    t = build_task(tmp_path, {"calc.py": CALC, "test_calc.py": TESTS, "setup.py": _SETUP}, spec)
    venv = t.env.bin_dir.parent
    boxed = judge(t.inst, t.env, t.mirror, _PLANTING_DIFF, work_dir=tmp_path)
    assert boxed.resolved and boxed.sandbox == "bwrap", boxed.output_tail
    assert not list(venv.rglob("planted.py"))
    # On the host the install does write into the shared virtualenv: the check above can fail.
    plain = judge(t.inst, t.env, t.mirror, _PLANTING_DIFF, work_dir=tmp_path, sandboxed=False)
    assert plain.resolved, plain.output_tail
    assert list(venv.rglob("planted.py"))


def test_the_verdict_does_not_depend_on_the_runs_hash_seed(fake_task: FakeTask) -> None:
    # sympy 1.0's assumptions recurse for some string-hash seeds, so one of its tests passes
    # or fails by the seed Python drew; the judge must give a diff the same verdict each time.
    t = fake_task
    seeded = subprocess.run([sys.executable, "-c", "print(hash('codeloop'))"], env={
        "PYTHONHASHSEED": TEST_SEED}, capture_output=True, text=True, check=True).stdout.strip()
    by_seed = t.inst.patch.replace(
        "+    return a + b\n", f"+    return a + b if hash('codeloop') == {seeded} else a - b\n")
    assert by_seed != t.inst.patch
    verdicts = [judge(t.inst, t.env, t.mirror, by_seed) for _ in range(2)]
    assert all(v.resolved for v in verdicts), verdicts[0].output_tail
