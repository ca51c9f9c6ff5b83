"""The verifier's settings: the dict the integrator passes, validated at the boundary."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codeloop.errors import ConfigError

GATE_KINDS = ("test", "error", "build", "type", "lint", "timeout", "crash")

# Python picks a new string-hash seed per process (and sympy's runner a new `random` seed per
# run), so set order can differ between the baseline and the run after the edits, and a test
# that depends on it would look broken by the edits. Every verification run gets this seed.
TEST_SEED = "0"


class VerifySettings(BaseModel):
    """`test`/`lint`/`typecheck`/`security` name commands and override detection and AGENTS.md.

    A list that is given but empty turns that category off.
    """

    model_config = ConfigDict(extra="forbid")

    test: str | None = None
    lint: list[str] | None = None
    typecheck: list[str] | None = None
    security: list[str] | None = None
    python: str = "python3"
    # Variables every verification command gets (e.g. a PATH that leads to the project's
    # virtualenv); the sandbox otherwise starts commands with a minimal environment.
    env: dict[str, str] = Field(default_factory=dict)
    # Tests run by `baseline()` when no target is given to it: None = the whole suite.
    baseline_target: str | None = None
    max_fix_rounds: int = Field(default=3, ge=1)
    test_timeout_s: float = Field(default=900.0, gt=0)
    check_timeout_s: float = Field(default=300.0, gt=0)
    # Wall-clock seconds all verification runs of a session may take together.
    time_budget_s: float = Field(default=3600.0, gt=0)
    # Failure kinds that block `finish` when new; security blocks on new high findings only.
    block_on: list[str] = Field(default_factory=lambda: list(GATE_KINDS))
    block_on_security: bool = True
    # Related test files run at most, the closest first: an edit to a hub module relates to
    # most of a suite, which the wider run (as the budget allows) covers instead.
    max_related_files: int = Field(default=40, ge=1)
    # Run failing tests the baseline never ran on the original files, once, to tell new from old.
    backfill_baseline: bool = True
    max_output_bytes: int = Field(default=256_000, gt=1000)

    @property
    def command_env(self) -> dict[str, str]:
        """What each verification command gets: `env`, with the fixed hash seed unless it sets one."""
        return {"PYTHONHASHSEED": TEST_SEED, **self.env}

    @classmethod
    def load(cls, data: dict[str, Any] | None) -> VerifySettings:
        try:
            return cls.model_validate(data or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'verify'}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(
                f"bad verify settings: {problems}",
                hint=f"allowed keys: {', '.join(sorted(cls.model_fields))}",
            ) from exc
