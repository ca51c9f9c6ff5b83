"""The plain backend: no isolation, only a deadline, a process-group kill and an output cap.

Used with `--no-sandbox` and always on a private copy of the repository.
"""

from __future__ import annotations

from pathlib import Path

from codeloop.sandbox.base import CommandResult, Limits
from codeloop.sandbox.environment import command_env, host_tmp
from codeloop.sandbox.process import run_process


class SubprocessSandbox:
    """Run `sh -c COMMAND` as a host process in its own session."""

    name = "subprocess"

    def run(
        self,
        command: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
    ) -> CommandResult:
        lim = limits or Limits()
        outcome = run_process(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=command_env(env, home=host_tmp()),
            timeout_s=lim.timeout_s,
            max_output_bytes=lim.max_output_bytes,
        )
        return outcome.result(self.name, ["no isolation: the command ran as a host process"])
