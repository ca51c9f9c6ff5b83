"""Plan scripts for the scripted model, and a model wrapper that keeps what the model was shown."""

from __future__ import annotations

from typing import Any

from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.llm.types import Completion, DeltaCallback, ModelRequest
from tests.session.helpers import call, turn

STEPS = [{"id": "read", "title": "Read calc.py"},
         {"id": "fix", "title": "Make add() add", "depends_on": ["read"]},
         {"id": "test", "title": "Run the tests", "depends_on": ["fix"]}]


def propose(cid: str, summary: str = "fix add() in calc.py",
            steps: list[dict[str, Any]] | None = None) -> Turn:
    return turn(call("propose_plan", cid, summary=summary, steps=steps or STEPS))


def update(*changes: tuple[str, str]) -> dict[str, Any]:
    return call("update_plan", status=dict(changes))


WORK = [
    turn(update(("read", "done"), ("fix", "in_progress")),
         call("edit_file", path="calc.py", old="return a - b", new="return a + b")),
    turn(update(("fix", "done"), ("test", "done"))),
    turn(call("finish", summary="add() adds now")),
]


class Recording:
    """A real model whose requests are kept, to check what the model was shown."""

    def __init__(self, turns: list[Turn]) -> None:
        self.inner = ScriptedModel(turns)
        self.name = self.inner.name
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        self.requests.append(request)
        return self.inner.complete(request, on_delta)

    def last_shown(self) -> str:
        return "\n".join(m.content for m in self.requests[-1].messages)
