"""A session's start and its index: the first model call does not wait for the index, a
run that ends early does not either, and a warm session loads what its first one saved."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.context.messages import CONTEXT_NAME
from codeloop.index import store as index_store
from codeloop.index.registry import open_index
from codeloop.index.service import RepoIndex
from codeloop.index.warmup import WARMUP_SERVICE, IndexWarmup, wait_for_warmups
from codeloop.llm.scripted import ScriptedModel
from codeloop.llm.types import Completion, DeltaCallback, ModelRequest
from codeloop.session import cleanup
from codeloop.session.setup import RuntimeParts, build_runner, open_store, start_session
from codeloop.tools import search_tools
from tests.session.context_helpers import (
    HEADER,
    Recording,
    code_session,
    contexts,
    shop_repo,
)
from tests.session.helpers import call, turn


def test_the_first_model_call_does_not_wait_for_a_slow_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_tools, "INDEX_WAIT_S", 0.2)
    repo, cfg, store, sid = code_session(tmp_path, 0.5)
    release = threading.Event()
    opened = threading.Event()

    def slow_opener(view: Path, seed: Path, cache: Path) -> RepoIndex:
        release.wait(30)  # a cold index of a large repository, as long as the test likes
        index = open_index(view, cache, seed=seed)
        opened.set()
        return index

    script = [turn(call("search_code", query="add numbers")),
              turn(call("read_file", path="calc.py")),
              turn(call("grep", pattern="def add")),
              turn(call("finish", summary="looked"))]

    class Gated(Recording):
        def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                     ) -> Completion:
            if len(self.requests) == 1:
                release.set()  # the index finishes only after the model started working
                assert opened.wait(30)
            elif len(self.requests) == 2:
                # The context is built on the index's thread once it opens; on a loaded
                # machine that can outlast the turns left, so the third turn waits for it.
                assert warmup[0].wait_done(30)
            return super().complete(request, on_delta)

    warmup: list[IndexWarmup] = []
    model = Gated(ScriptedModel(script))
    runner = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data",
                          parts=RuntimeParts(index_opener=slow_opener))
    warmup.append(runner.ctx.services[WARMUP_SERVICE])
    state = runner.run()
    assert state.status == "finished"
    first = model.requests[0].messages
    assert not any(m.name == CONTEXT_NAME or HEADER in m.content for m in first)
    events = [e.event for e in store.read(sid)]
    search = next(e for e in events if e.type == "tool_call_finished")
    assert "still being built" in (search.error or "") and "grep" in (search.error or "")
    built = contexts(store, sid)
    assert built and built[0].phase == "task"
    # It arrived with a later turn, in the order the log has it.
    assert any(HEADER in m.content for r in model.requests[2:] for m in r.messages)


def test_a_run_that_ends_early_does_not_wait_for_the_index_and_its_view_index_goes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cleanup, "END_WAIT_S", 0.1)
    repo, cfg, store, sid = code_session(tmp_path, 0)
    release = threading.Event()

    def slow_opener(view: Path, seed: Path, cache: Path) -> RepoIndex:
        release.wait(30)
        return open_index(view, cache, seed=seed)

    model = Recording(ScriptedModel([turn(call("finish", summary="-"))]))
    runner = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data",
                          parts=RuntimeParts(index_opener=slow_opener))
    assert runner.run().status == "finished"
    warmup = runner.ctx.services["index_warmup"]
    cleanup.end_run(runner.ctx)  # returns while the index is still being built
    assert not warmup.wait_done(0)
    release.set()
    warmup.close()
    assert not index_store.index_dir(runner.ctx.workspace.path).exists()


def test_a_warm_session_loads_the_file_graph_and_commit_search_its_first_session_saved(
        tmp_path: Path) -> None:
    """The first session builds them for its task context and gives its repository a copy
    of its index with them; the next session's first context loads them from that copy."""
    repo = shop_repo(tmp_path)
    cfg = Settings(verify_on_finish=False, context_tokens=600, context_wait_s=60)
    store = open_store(tmp_path / "data")
    task = "apply_discount rounds the discounted price down; it should round to the cent"
    origins = []
    for n in range(2):
        sid = start_session(store, task, repo, cfg, "scripted")
        model = Recording(ScriptedModel([turn(call("finish", summary="looked"))]))
        runner = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / f"data{n}")
        runner.run()
        index = runner.ctx.services["index"]
        origins.append((index.graph_origin, index.history_origin))
        assert contexts(store, sid)[0].ranked[0] == "billing.py"
        assert model.requests[0].messages[2].content.startswith(HEADER)
        cleanup.end_run(runner.ctx)
        wait_for_warmups()  # the first session's copy is given once its thread is done
    assert origins == [("built", "built"), ("stored", "stored")]


def test_the_first_call_waits_for_the_first_context_not_for_what_is_loaded_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first context the index thread loads every file's definitions; the first
    model call is sent with the context while that is still going on."""
    release, finished = threading.Event(), threading.Event()
    real_preload = RepoIndex.preload_definitions

    def slow_preload(index: RepoIndex) -> None:
        release.wait(5)
        real_preload(index)
        finished.set()

    monkeypatch.setattr(RepoIndex, "preload_definitions", slow_preload)
    repo, cfg, store, sid = code_session(tmp_path, 60)
    preloading_at_first_call = []

    class Watching(Recording):
        def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None
                     ) -> Completion:
            if not self.requests:
                preloading_at_first_call.append(not finished.is_set())
                release.set()
            return super().complete(request, on_delta)

    model = Watching(ScriptedModel([turn(call("finish", summary="-"))]))
    runner = build_runner(store, sid, repo, cfg, model, base_dir=tmp_path / "data")
    runner.run()
    assert model.requests[0].messages[2].content.startswith(HEADER)
    assert preloading_at_first_call == [True]
    runner.ctx.services[WARMUP_SERVICE].close()
    assert finished.is_set()
