"""A session's network (issue 20): `pip install` through the egress proxy from a local index.

The index is a real HTTP server on 127.0.0.1; the session reaches it only because the config
lists that exact address:port. Without the entry the same command is refused, and the model
reads why.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codeloop.config import Settings
from codeloop.config_tables import NetworkSettings
from codeloop.events import (
    ApprovalGiven,
    ApprovalRequested,
    EgressDecided,
    NetworkHostAllowed,
    ToolCallData,
    ToolCallFinished,
)
from codeloop.sandbox.probe import Capabilities
from codeloop.session.cleanup import end_run
from codeloop.session.network import NETWORK
from codeloop.session.setup import RuntimeParts, network_for
from codeloop.session.store import SQLiteEventStore
from tests.security.local_index import GREETING, local_index
from tests.session.helpers import call, make_repo, new_session, scripted, turn

from .conftest import SYSTEM_PYTHON

pytestmark = pytest.mark.security


def _pip(url: str) -> str:
    return (f"python3 -m pip install -q --disable-pip-version-check --no-cache-dir --retries 0 "
            f"--timeout 10 --target deps --index-url {url} tinypkg && "
            "python3 -c \"import sys; sys.path.insert(0, 'deps'); import tinypkg; "
            "print(tinypkg.GREETING)\"")


def _session(tmp_path: Path, allow: list[str], *calls: dict[str, object],
             mode: str = "full-auto") -> tuple[SQLiteEventStore, str]:
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"CANNOT EXERCISE: the egress forwarder needs {SYSTEM_PYTHON}")
    cfg = Settings(sandbox=True, verify_on_finish=False, approval_mode=mode,  # type: ignore[arg-type]
                   network=NetworkSettings(allow=allow, enabled=True))
    script = [turn(c) for c in calls] + [turn(call("finish", summary="done"))]
    store, runner = new_session(tmp_path, make_repo(tmp_path), scripted(script), cfg)
    runner.run()
    network = runner.ctx.services[NETWORK]
    end_run(runner.ctx)  # as the CLI and the server do: the proxy stops with the run
    assert not network.proxy.socket_path.exists() and not network.directory.exists()
    return store, runner.session_id


def _events(store: SQLiteEventStore, sid: str, kind: type) -> list:  # type: ignore[type-arg]
    return [e.event for e in store.read(sid) if isinstance(e.event, kind)]


def test_pip_install_from_an_allowed_local_index_succeeds(
        tmp_path: Path, caps: Capabilities) -> None:
    with local_index(tmp_path) as index:
        store, sid = _session(tmp_path, [f"127.0.0.1:{index.port}"],
                              call("run", command=_pip(index.url)))
    ran = _events(store, sid, ToolCallFinished)[0]
    assert ran.ok, ran.output
    assert GREETING in ran.output
    assert any(p.endswith(".whl") for p in index.paths)  # the wheel came from the index
    decided = _events(store, sid, EgressDecided)
    assert decided and all(d.allowed and d.host == "127.0.0.1" for d in decided)
    started = store.read(sid)[0].event
    assert "through a proxy (HTTP_PROXY" in started.system_prompt  # type: ignore[union-attr]
    assert f": 127.0.0.1:{index.port}." in started.system_prompt  # type: ignore[union-attr]


def test_pip_install_from_a_host_not_allowed_is_refused_with_a_reason(
        tmp_path: Path, caps: Capabilities) -> None:
    with local_index(tmp_path) as index:
        store, sid = _session(tmp_path, ["pypi.org"], call("run", command=_pip(index.url)))
    ran = _events(store, sid, ToolCallFinished)[0]
    assert not ran.ok
    assert GREETING not in ran.output
    assert index.paths == []  # nothing reached the index
    assert f"[network] the egress proxy refused 1 request(s):\n- 127.0.0.1:{index.port}" \
        in ran.output
    assert "Allowed hosts: pypi.org" in ran.output and "request_network" in ran.output
    decided = _events(store, sid, EgressDecided)
    assert decided and not any(d.allowed for d in decided)
    assert "IP literals are refused" in decided[0].reason


def test_without_network_config_commands_have_no_network(
        tmp_path: Path, caps: Capabilities) -> None:
    with local_index(tmp_path) as index:
        cfg = Settings(sandbox=True, verify_on_finish=False)
        script = [turn(call("run", command=_pip(index.url))), turn(call("finish", summary="x"))]
        store, runner = new_session(tmp_path, make_repo(tmp_path), scripted(script), cfg)
        runner.run()
    ran = _events(store, runner.session_id, ToolCallFinished)[0]
    assert not ran.ok and index.paths == []
    assert "[network] this session has no network (`pip install` reaches the network)" \
        in ran.output
    assert _events(store, runner.session_id, EgressDecided) == []
    started = store.read(runner.session_id)[0].event
    assert "request_network" not in [t["name"] for t in started.tools]  # type: ignore[union-attr]
    assert "# Network" not in started.system_prompt  # type: ignore[union-attr]


def test_request_network_is_denied_in_full_auto(tmp_path: Path, caps: Capabilities) -> None:
    store, sid = _session(tmp_path, ["pypi.org"],
                          call("request_network", host="docs.python.org", reason="read docs"))
    result = _events(store, sid, ToolCallFinished)[0]
    assert not result.ok and "full-auto" in (result.error or "")
    assert _events(store, sid, NetworkHostAllowed) == []


def test_in_ask_mode_the_user_allows_a_new_host_and_private_addresses_stay_refused(
        tmp_path: Path, caps: Capabilities) -> None:
    asked: list[str] = []

    def approver(req: ApprovalRequested, call_: ToolCallData) -> ApprovalGiven:
        asked.append(req.summary)
        return ApprovalGiven(call_id=call_.id, approved=True, digest=req.digest)

    with local_index(tmp_path) as index:
        if not Path(SYSTEM_PYTHON).exists():
            pytest.skip(f"CANNOT EXERCISE: the egress forwarder needs {SYSTEM_PYTHON}")
        cfg = Settings(sandbox=True, verify_on_finish=False, approval_mode="ask",
                       network=NetworkSettings(enabled=True))
        fetch = f"curl -fsS -m 10 http://localhost:{index.port}/simple/"
        script = [turn(call("run", command=fetch)),
                  turn(call("request_network", host=f"localhost:{index.port}",
                            reason="the package index")),
                  turn(call("run", command=fetch)), turn(call("finish", summary="done"))]
        store, runner = new_session(tmp_path, make_repo(tmp_path), scripted(script), cfg,
                                    RuntimeParts(approver=approver))
        runner.run()
    sid = runner.session_id
    assert f"let commands reach localhost:{index.port}: the package index" in asked
    first, granted, second = _events(store, sid, ToolCallFinished)[:3]
    assert not first.ok and "not on the allow-list" in first.output
    assert granted.ok and "allowed for the rest of this session" in granted.output
    assert [e.entry for e in _events(store, sid, NetworkHostAllowed)] == [
        f"localhost:{index.port}"]
    reasons = [d.reason for d in _events(store, sid, EgressDecided)]
    assert "host is not on the allow-list" in reasons[0]
    # Allowed now, yet a name that resolves to loopback never reaches it (DNS rebinding).
    assert reasons[1] == "resolves to a private or special address"
    assert "private or special address" in second.output and index.paths == []
    # A resumed session keeps what the user allowed.
    network = network_for(store, sid, cfg)
    assert network is not None and f"localhost:{index.port}" in network.allowed
    network.close()


def test_npm_install_from_an_allowed_local_registry_succeeds(
        tmp_path: Path, caps: Capabilities) -> None:
    if shutil.which("npm") is None or not Path("/usr/bin/npm").exists():
        pytest.skip("CANNOT EXERCISE: npm is not installed under /usr")
    npm = ("npm install --no-audit --no-fund --no-update-notifier --no-package-lock "
           "--registry {registry} tinypkg && node -e \"console.log(require('tinypkg').greeting)\"")
    with local_index(tmp_path) as index:
        store, sid = _session(tmp_path, [f"127.0.0.1:{index.port}"],
                              call("run", command=npm.format(registry=index.npm_registry)))
    ran = _events(store, sid, ToolCallFinished)[0]
    assert ran.ok, ran.output
    assert GREETING in ran.output
    assert any(p.endswith(".tgz") for p in index.paths)


def test_without_the_sandbox_there_is_no_proxy_and_no_promise_of_one(tmp_path: Path) -> None:
    cfg = Settings(sandbox=False, verify_on_finish=False,
                   network=NetworkSettings(allow=["pypi.org"]))
    store, runner = new_session(tmp_path, make_repo(tmp_path),
                                scripted([turn(call("finish", summary="x"))]), cfg)
    started = store.read(runner.session_id)[0].event
    assert NETWORK not in runner.ctx.services
    assert "request_network" not in [t["name"] for t in started.tools]  # type: ignore[union-attr]
    assert "# Network" not in started.system_prompt  # type: ignore[union-attr]
