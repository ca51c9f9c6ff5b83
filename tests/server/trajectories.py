"""Trajectories from real scripted sessions, exported with the real export code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from codeloop.config_tables import Price
from codeloop.llm.pricing import cost_of
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.llm.types import Completion, DeltaCallback, ModelRequest
from codeloop.session.export import trajectory
from tests.session.helpers import FIX_SCRIPT, TEST_CMD, call, make_repo, new_session, turn

# Per million tokens: gives every step a cost, so per-step and total cost can be checked.
PRICE = Price(input=3.0, output=15.0)

# Markup and script in every place a trajectory carries model, tool or repository text.
HOSTILE_SCRIPT = [
    turn(call("read_file", path="calc.py"), text='<img src=x onerror="window.__pwned=1">'),
    turn(call("run", command="echo '<script>window.__pwned=2</script>'")),
    turn(call("edit_file", path="calc.py", old="return a - b",
              new="return a + b  # </script><img src=x onerror=window.__pwned=3>")),
    turn(call("run", command=TEST_CMD)),
    turn(call("finish", summary="<b>done</b></script><script>window.__pwned=4</script>")),
]


class PricedScripted(ScriptedModel):
    """The scripted model, its usage priced like a provider's (scripted calls cost nothing)."""

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        done = super().complete(request, on_delta)
        return dataclasses.replace(done, cost_usd=cost_of(done.usage, PRICE))


def recorded_trajectory(tmp: Path, turns: list[Turn] | None = None) -> dict[str, Any]:
    """Run a session on a fresh repository with the script and export it as `export` does."""
    repo = make_repo(tmp)
    store, runner = new_session(tmp, repo, PricedScripted(FIX_SCRIPT if turns is None else turns))
    runner.run()
    return trajectory(store.get(runner.session_id), store.read(runner.session_id),
                      runner.ctx.workspace.diff())


def with_extra_events(doc: dict[str, Any], *events: dict[str, Any]) -> dict[str, Any]:
    """The trajectory with events of types the viewer may not know, inserted after step 1."""
    at = next(i for i, e in enumerate(doc["events"]) if e["type"] == "model_call_finished")
    doc["events"][at + 1:at + 1] = [{"seq": 1000 + n, "ts": 0.0, **e} for n, e in enumerate(events)]
    return doc


def write(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False))
    return path
