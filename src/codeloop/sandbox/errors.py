"""Errors of the sandbox layer."""

from __future__ import annotations

from codeloop.errors import CodeloopError


class SandboxUnavailable(CodeloopError):
    """Isolation was required but this machine cannot provide it."""


class SandboxMisuse(CodeloopError):
    """A command was asked to run somewhere the sandbox does not cover."""
