"""Preparing a task end to end: its environment, a workspace checkout, and the judge's verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeloop.eval.scratch import scratch_dir
from codeloop.eval.swebench.checkout import checkout, mirror_path, missing_files, task_checkout
from codeloop.eval.swebench.envs import EnvBuilder, EnvUnavailable, TaskEnv
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.judge import Verdict, grade, judge
from codeloop.eval.swebench.specs import EnvSpec, SpecMissing, spec_for


@dataclass
class Validation:
    """The environment check: the gold patch must resolve, an empty diff must not.

    Tests that fail under the gold patch only because the network is unreachable here are
    `excluded` from grading (they cannot say anything about a candidate diff either).
    """

    ok: bool
    problem: str = ""
    excluded: list[str] = field(default_factory=list)

    @classmethod
    def from_runs(cls, inst: SweInstance, gold: Verdict, empty: Verdict) -> Validation:
        wanted = set(inst.FAIL_TO_PASS) | set(inst.PASS_TO_PASS)
        # A PASS_TO_PASS test that fails even with the gold patch cannot pass with any fix
        # here: it says something about this machine (network, a missing service), not about
        # the diff. Left out of grading, and listed; too many of them means a broken env.
        gold_p2p = set(grade(inst, gold.statuses).p2p_failing)
        if inst.PASS_TO_PASS and len(gold_p2p - gold.network) > len(inst.PASS_TO_PASS) // 2:
            return cls(False, f"{len(gold_p2p)} of {len(inst.PASS_TO_PASS)} PASS_TO_PASS tests "
                              f"fail with the gold patch (e.g. {sorted(gold_p2p)[0]})")
        excluded = sorted((gold.network & wanted) | gold_p2p)
        skip = frozenset(excluded)
        gold_ok = grade(inst, gold.statuses, skip)
        empty_ok = grade(inst, empty.statuses, skip)
        if set(inst.FAIL_TO_PASS) <= skip:
            return cls(False, "every FAIL_TO_PASS test needs the network, unreachable here",
                       excluded)
        if not gold_ok.resolved:
            return cls(False, f"gold patch does not resolve here: {gold_ok.reason} "
                              f"(e.g. {gold_ok.f2p_failing[0]})", excluded)
        if empty_ok.resolved:
            offline = " (the others need the network)" if skip & set(inst.FAIL_TO_PASS) else ""
            return cls(False, "resolved without any change: the FAIL_TO_PASS tests that run here "
                              f"pass before the fix{offline}", excluded)
        return cls(True, "", excluded)


NO_FAIL_TO_PASS = "the instance lists no FAIL_TO_PASS tests"


def _missing_note(mirror: Path, commit: str) -> str:
    """Why a check may have failed that no environment fix can change: files the mirror lacks
    (astropy 5.1+ reads its IERS-B table at import; without it every test errors)."""
    missing = missing_files(mirror, commit)
    if not missing:
        return ""
    return f"; the mirror lacks {len(missing)} file(s) of the commit: {', '.join(missing[:3])}"


class Bench:
    """Mirrors, the environment cache and a scratch directory for checkouts."""

    def __init__(self, mirrors: Path, env_cache: Path, *, work_dir: Path | None = None,
                 rebuild_envs: bool = False, sandbox: bool = True,
                 specs: Callable[[str, str], EnvSpec] = spec_for) -> None:
        self.mirrors = mirrors
        self.sandbox = sandbox  # judge in the sandbox (where bwrap can isolate)
        self.specs = specs
        self.work_dir = work_dir
        self.builder = EnvBuilder(env_cache, rebuild=rebuild_envs)
        # The agent's checkouts, one per repository, kept between instances and runs.
        self.checkouts = (work_dir or env_cache) / "checkouts"

    def mirror(self, inst: SweInstance) -> Path:
        return mirror_path(self.mirrors, inst.mirror_name)

    def agent_checkout(self, inst: SweInstance, scratch: Path) -> AbstractContextManager[Path]:
        """The task's repository at its base commit for the agent (see `task_checkout`)."""
        return task_checkout(self.mirror(inst), inst.base_commit,
                             self.checkouts / inst.mirror_name, scratch)

    def environment(self, inst: SweInstance) -> TaskEnv:
        """The built environment for the task; raises EnvUnavailable with the reason."""
        try:
            spec = self.specs(inst.repo, inst.version)
        except SpecMissing as exc:
            raise EnvUnavailable(exc.message) from exc
        mirror = self.mirror(inst)
        with scratch_dir(self.work_dir, "envbuild") as tmp:
            repo = tmp / "repo"
            if not self.builder.is_cached(spec):
                # As the harness does: one environment per version, installed from the
                # version's environment-setup commit (the newest dependencies it needs).
                checkout(mirror, inst.setup_commit, repo)
            return self.builder.get(spec, mirror, inst.setup_commit, repo)

    def judge(self, inst: SweInstance, env: TaskEnv, diff: str,
              excluded: frozenset[str] = frozenset()) -> Verdict:
        return judge(inst, env, self.mirror(inst), diff, work_dir=self.work_dir,
                     excluded=excluded, sandboxed=self.sandbox)

    def validate(self, inst: SweInstance, env: TaskEnv) -> Validation:
        """Judge the gold patch and an empty diff once; the answer is cached with the env."""
        cached = env.root / "validated" / f"{inst.instance_id}.json"
        if cached.is_file():
            return Validation(**json.loads(cached.read_text("utf-8")))
        if not inst.FAIL_TO_PASS:
            result = Validation(False, NO_FAIL_TO_PASS)
        else:
            gold = self.judge(inst, env, inst.patch)
            empty = self.judge(inst, env, "")
            result = Validation.from_runs(inst, gold, empty)
            if not result.ok:
                result.problem += _missing_note(self.mirror(inst), inst.base_commit)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(asdict(result)), "utf-8")
        return result
