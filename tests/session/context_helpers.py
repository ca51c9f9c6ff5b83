"""What the task-context tests share: a recording model and two small repositories."""

from __future__ import annotations

from pathlib import Path

from codeloop.config import Settings
from codeloop.events import ContextBuilt
from codeloop.llm.scripted import ScriptedModel
from codeloop.llm.types import Completion, DeltaCallback, ModelRequest
from codeloop.session.control import Control
from codeloop.session.setup import open_store, start_session
from codeloop.session.store import SQLiteEventStore
from tests.session.helpers import committed, git, make_repo

TASK = "add() in calc.py subtracts; make the tests pass"
HEADER = "# Code context for the task"


class Recording:
    """A real scripted model that keeps every request it was sent."""

    def __init__(self, model: ScriptedModel, control: Control | None = None) -> None:
        self.model = model
        self.name = model.name
        self.requests: list[ModelRequest] = []
        self.control = control

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                 ) -> Completion:
        self.requests.append(request)
        if self.control is not None:
            self.control.pause.set()  # stop after this step, as a person pressing pause
        return self.model.complete(request, on_delta)


def code_repo(tmp: Path) -> Path:
    repo = make_repo(tmp)
    (repo / "AGENTS.md").write_text("Run the tests with unittest.")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "instructions")
    return repo


def shop_repo(tmp: Path) -> Path:
    """Ten small modules; only billing.py is about discounts, and shipping.py uses rates.py."""
    repo = tmp / "shop"
    repo.mkdir()
    topics = ["inventory", "orders", "customers", "email", "reports", "search", "auth"]
    for name in topics:
        (repo / f"{name}.py").write_text(
            f'"""The {name} of the shop."""\n\n\ndef load_{name}(store):\n'
            f"    return store.get({name!r}, [])\n\n\ndef count_{name}(store):\n"
            f"    return len(load_{name}(store))\n")
    (repo / "billing.py").write_text(
        '"""Prices and invoices."""\n\n\ndef apply_discount(price, percent):\n'
        "    # rounds down: the bug\n    return int(price * (100 - percent) / 100)\n\n\n"
        "def invoice_total(lines):\n    return sum(apply_discount(p, d) for p, d in lines)\n")
    (repo / "rates.py").write_text(
        '"""Postal zones and their rates."""\n\n\ndef zone_rate(zone):\n'
        "    return {1: 4.5, 2: 7.0, 3: 12.0}.get(zone, 20.0)\n\n\n"
        "def surcharge_for_zone(zone, weight):\n    return weight * zone_rate(zone) / 10\n")
    (repo / "shipping.py").write_text(
        '"""Parcels."""\n\nfrom rates import surcharge_for_zone, zone_rate\n\n\n'
        "def parcel_cost(zone, weight):\n"
        "    return zone_rate(zone) + surcharge_for_zone(zone, weight)\n")
    return committed(repo, "shop")


def code_session(tmp: Path, context_wait_s: float) -> tuple[Path, Settings, SQLiteEventStore, str]:
    """`code_repo` with a session on TASK started in `tmp / "data"`: repo, settings, store, id."""
    repo = code_repo(tmp)
    cfg = Settings(verify_on_finish=False, context_wait_s=context_wait_s)
    store = open_store(tmp / "data")
    return repo, cfg, store, start_session(store, TASK, repo, cfg, "scripted")


def contexts(store: SQLiteEventStore, sid: str) -> list[ContextBuilt]:
    return [e.event for e in store.read(sid) if isinstance(e.event, ContextBuilt)]
