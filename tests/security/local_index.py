"""A package index on 127.0.0.1 serving one tiny package built here: as a wheel under PEP 503
"simple" pages (pip), and as a tarball under an npm registry document (npm)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

NAME, VERSION = "tinypkg", "0.1"
GREETING = "hello from tinypkg"


def build_wheel(directory: Path) -> Path:
    """A pure-Python wheel of `tinypkg` (a module and its metadata), zipped by hand."""
    wheel = directory / f"{NAME}-{VERSION}-py3-none-any.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    files = {
        f"{NAME}/__init__.py": f"GREETING = {GREETING!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def build_tarball() -> bytes:
    """An npm package tarball of `tinypkg` (package.json and index.js under package/)."""
    files = {"package/package.json": json.dumps({"name": NAME, "version": "0.1.0",
                                                  "main": "index.js"}),
             "package/index.js": f"module.exports = {{ greeting: {GREETING!r} }};\n"}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _npm_document(port: int, tarball: bytes) -> bytes:
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    version = {"name": NAME, "version": "0.1.0", "dist": {
        "tarball": f"http://127.0.0.1:{port}/{NAME}/-/{NAME}-0.1.0.tgz",
        "shasum": hashlib.sha1(tarball).hexdigest(), "integrity": integrity}}
    return json.dumps({"name": NAME, "dist-tags": {"latest": "0.1.0"},
                       "versions": {"0.1.0": version}}).encode()


@dataclass
class Index:
    port: int
    paths: list[str] = field(default_factory=list)  # every path the index was asked for

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    @property
    def npm_registry(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@contextmanager
def local_index(directory: Path) -> Iterator[Index]:
    """Serve /simple/tinypkg/ and the wheel until the block ends."""
    wheel = build_wheel(directory)
    data = wheel.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    pages = {
        "/simple/": f'<a href="/simple/{NAME}/">{NAME}</a>'.encode(),
        f"/simple/{NAME}/": f'<a href="/files/{wheel.name}#sha256={sha}">{wheel.name}</a>'.encode(),
        f"/files/{wheel.name}": data,
    }
    index = Index(0)
    tarball = build_tarball()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index.paths.append(self.path)
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            body = body if body is not None else b"not found"
            kind = "text/html" if self.path.startswith("/simple/") else "application/json"
            if self.path.endswith((".whl", ".tgz")):
                kind = "application/octet-stream"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    index.port = int(server.server_address[1])
    pages[f"/{NAME}"] = _npm_document(index.port, tarball)
    pages[f"/{NAME}/-/{NAME}-0.1.0.tgz"] = tarball
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
