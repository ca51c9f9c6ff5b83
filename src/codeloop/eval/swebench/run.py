"""What one `codeloop eval swebench` run shares, as plain data: here it builds the run's
Evaluation once; a Ray worker builds its own from the same value, on its own node."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeloop.config import Settings
from codeloop.eval.swebench.envs import default_cache_dir
from codeloop.eval.swebench.evaluate import Evaluation, InstanceResult, model_factory
from codeloop.eval.swebench.harness import Bench
from codeloop.eval.swebench.instances import SweInstance
from codeloop.eval.swebench.specs import EnvSpec, spec_for


@dataclass(frozen=True)
class SwebenchRun:
    """The options of a run; picklable (paths, strings and the settings, never a model)."""

    mirrors: Path
    model: str
    settings: Settings
    # None: the default cache of whichever machine runs the instance (each node its own).
    env_cache: Path | None = None
    work_dir: Path | None = None
    trajectories: Path | None = None
    rebuild_envs: bool = False
    validate_only: bool = False
    # The environment recipes (a module-level function, so a worker imports it by name).
    specs: Callable[[str, str], EnvSpec] = spec_for

    def evaluation(self) -> Evaluation:
        bench = Bench(self.mirrors, self.env_cache or default_cache_dir(), work_dir=self.work_dir,
                      rebuild_envs=self.rebuild_envs, sandbox=self.settings.sandbox,
                      specs=self.specs)
        return Evaluation(bench, model_factory(self.model, self.settings), self.settings,
                          self.work_dir, self.trajectories)

    def instance(self, inst: SweInstance, evaluation: Evaluation) -> InstanceResult:
        """One instance's record: the environment check alone with --validate-only."""
        return evaluation.check(inst) if self.validate_only else evaluation.one(inst)

    def blank(self, inst: SweInstance, evaluation: Evaluation) -> InstanceResult:
        """The record of an instance that never ran to its end."""
        return evaluation.blank(inst, gold=self.validate_only)


def run_instance(inst: SweInstance, run: SwebenchRun) -> InstanceResult:
    """One instance on an Evaluation of its own (the body of a Ray task)."""
    return run.instance(inst, run.evaluation())


def environment_of(inst: SweInstance) -> tuple[str, str]:
    """The environment an instance uses (one per repository and version): two instances of one
    hold its lock in turn, so the dispatchers start an instance of another first."""
    return inst.repo, inst.version
