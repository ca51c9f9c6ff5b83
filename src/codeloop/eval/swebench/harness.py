"""Preparing a task end to end: its environment, a workspace checkout, and the judge's verdicts."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from codeloop.eval.swebench.checkout import checkout, mirror_path
from codeloop.eval.swebench.envs import EnvBuilder, EnvUnavailable, TaskEnv
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.judge import Verdict, judge
from codeloop.eval.swebench.specs import SpecMissing, spec_for


@dataclass
class Validation:
    """The environment check: the gold patch must resolve, an empty diff must not."""

    gold: Verdict
    empty: Verdict

    @property
    def ok(self) -> bool:
        return self.gold.resolved and not self.empty.resolved

    @property
    def problem(self) -> str:
        if not self.gold.resolved:
            return f"gold patch does not resolve: {self.gold.reason}"
        if self.empty.resolved:
            return "the task resolves without any change (FAIL_TO_PASS already passes)"
        return ""


class Bench:
    """Mirrors, the environment cache and a scratch directory for checkouts."""

    def __init__(self, mirrors: Path, env_cache: Path, *, work_dir: Path | None = None,
                 rebuild_envs: bool = False) -> None:
        self.mirrors = mirrors
        self.work_dir = work_dir
        self.builder = EnvBuilder(env_cache, rebuild=rebuild_envs)

    def mirror(self, inst: SweInstance) -> Path:
        return mirror_path(self.mirrors, inst.mirror_name)

    def environment(self, inst: SweInstance) -> TaskEnv:
        """The built environment for the task; raises EnvUnavailable with the reason."""
        try:
            spec = spec_for(inst.repo, inst.version)
        except SpecMissing as exc:
            raise EnvUnavailable(exc.message) from exc
        mirror = self.mirror(inst)
        with tempfile.TemporaryDirectory(prefix="codeloop-envbuild-", dir=self.work_dir) as tmp:
            repo = Path(tmp) / "repo"
            if not self.builder.is_cached(spec):
                checkout(mirror, inst.base_commit, repo)
            return self.builder.get(spec, mirror, inst.setup_commit, repo)

    def judge(self, inst: SweInstance, env: TaskEnv, diff: str) -> Verdict:
        return judge(inst, env, self.mirror(inst), diff, work_dir=self.work_dir)

    def validate(self, inst: SweInstance, env: TaskEnv) -> Validation:
        return Validation(gold=self.judge(inst, env, inst.patch), empty=self.judge(inst, env, ""))
