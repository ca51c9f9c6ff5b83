"""What the sandbox tests share: this machine's probed isolation."""

from __future__ import annotations

import pytest

from codeloop.sandbox.probe import Capabilities, probe


@pytest.fixture(scope="module")
def caps() -> Capabilities:
    """The probed capabilities; the module is skipped where bwrap cannot isolate (a module
    that needs more, such as overlay mounts, defines its own)."""
    found = probe()
    if not found.isolation_available:
        pytest.skip(f"CANNOT EXERCISE: bwrap isolation unavailable ({found.bwrap.detail})")
    return found
