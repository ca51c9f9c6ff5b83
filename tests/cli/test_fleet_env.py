"""The command line with the fleet's environment: CODELOOP_DATABASE_URL puts the session in
PostgreSQL, OTEL_EXPORTER_OTLP_ENDPOINT sends its trace to an OTLP/HTTP receiver."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.test_cli import cli
from tests.server.conftest import write_script
from tests.session.helpers import make_repo

pytestmark = pytest.mark.slow


def test_run_and_sessions_use_postgres_when_a_database_url_is_set(
        tmp_path: Path, pg_url: str) -> None:
    repo = make_repo(tmp_path)
    script = write_script(tmp_path / "script.json")
    run = cli(tmp_path, "run", "make the tests pass", "--repo", str(repo), "--model",
              f"scripted:{script}", CODELOOP_DATABASE_URL=pg_url)
    assert run.returncode == 0, run.stderr
    listed = cli(tmp_path, "sessions", "--json", CODELOOP_DATABASE_URL=pg_url)
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["status"] == "finished" and row["steps"] == 5
    assert not (tmp_path / "data" / "events.sqlite").exists()
    # Without the URL the same data directory has no sessions: they live in the database.
    assert json.loads(cli(tmp_path, "sessions", "--json").stdout) == []


@pytest.fixture
def otlp_receiver() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps every request it gets."""
    got: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", got
    server.shutdown()
    server.server_close()


def test_run_exports_its_trace_by_otlp(
        tmp_path: Path, otlp_receiver: tuple[str, list[tuple[str, bytes]]]) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    endpoint, got = otlp_receiver
    repo = make_repo(tmp_path)
    script = write_script(tmp_path / "script.json")
    run = cli(tmp_path, "run", "make the tests pass", "--repo", str(repo), "--model",
              f"scripted:{script}", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    assert run.returncode == 0, run.stderr
    names: list[str] = []
    for path, body in got:
        assert path == "/v1/traces"
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "codeloop"
            names += [s.name for scope in resource.scope_spans for s in scope.spans]
    assert names.count("codeloop.session") == 1
    assert names.count("codeloop.step") == names.count("codeloop.model_call") == 5
    assert names.count("codeloop.tool_call") == 5
