"""Shared set-up for sessions with roles: settings, scripts and what the log says."""

from __future__ import annotations

from typing import Any

from codeloop.config import Settings
from codeloop.config_tables import Budgets, RolesSettings
from codeloop.events import Event, ModelCallFinished
from codeloop.session.store import SQLiteEventStore
from tests.session.helpers import TEST_CMD, call, turn

CHECK = f"command: {TEST_CMD}"
READ = {"id": "read", "title": "Read calc.py", "files": ["calc.py"]}
FIX = {"id": "fix", "title": "Make add() add", "files": ["calc.py"], "depends_on": ["read"],
       "done_when": CHECK}


def roles_settings(*, budgets: Budgets | None = None, verify_on_finish: bool = True,
                   plan_approval: bool = False, **roles: Any) -> Settings:
    return Settings(sandbox=True, budgets=budgets or Budgets(), plan_approval=plan_approval,
                    verify_on_finish=verify_on_finish,
                    roles=RolesSettings(enabled=True, **roles))


def propose(cid: str, *steps: dict[str, Any], summary: str = "fix add()") -> Any:
    return turn(call("propose_plan", cid, summary=summary, steps=list(steps)))


def edit(old: str, new: str) -> dict[str, Any]:
    return call("edit_file", path="calc.py", old=old, new=new)


def events_of(store: SQLiteEventStore, sid: str, kind: type[Event]) -> list[Any]:
    return [s.event for s in store.read(sid) if isinstance(s.event, kind)]


def turn_roles(store: SQLiteEventStore, sid: str) -> list[str]:
    return [e.role for e in events_of(store, sid, ModelCallFinished)]
