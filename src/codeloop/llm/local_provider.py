"""`local:PATH.gguf`: a GGUF model run in-process with llama-cpp-python (the `local` extra)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from codeloop.config_tables import Price
from codeloop.errors import ConfigError
from codeloop.llm.llama_probe import build_has_amx, check_decodes
from codeloop.llm.openai_provider import OpenAIModel
from codeloop.llm.types import ContextWindowExceeded, ModelError

INSTALL_HINT = "install the extra: pip install 'codeloop[local]' (llama-cpp-python)"
# Request fields of the Chat Completions wire format that llama-cpp-python does not take.
_NOT_FOR_LLAMA = ("model", "stream_options", "extra_body")


class LocalModelError(ConfigError):
    """The local model cannot be loaded (missing extra, missing or non-GGUF file)."""


def check_gguf(path: Path) -> Path:
    if not path.is_file():
        raise LocalModelError(f"model file {path} does not exist",
                              "give local:PATH with the path of a .gguf file")
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise LocalModelError(f"{path} is not a GGUF model (it starts with {magic!r}, not "
                              "b'GGUF')", "convert it with llama.cpp's convert scripts, or "
                                          "download the .gguf build of the model")
    return path


def load_llama(path: Path, options: dict[str, Any]) -> Any:
    """A `llama_cpp.Llama` for `path`; `options` are settings.local (n_ctx, n_threads, ...)."""
    check_gguf(path)
    try:
        from llama_cpp import Llama, llama_print_system_info
    except ImportError as exc:
        raise LocalModelError("the local: provider needs llama-cpp-python, which is not "
                              "installed", INSTALL_HINT) from exc
    if build_has_amx(llama_print_system_info()):
        check_decodes(path)
    kwargs: dict[str, Any] = {"n_ctx": 4096, "verbose": False}
    kwargs.update({k: v for k, v in options.items()
                   if k in ("n_ctx", "n_threads", "n_threads_batch", "n_batch", "chat_format",
                            "seed", "n_gpu_layers")})
    # llama.cpp reads a prompt with every CPU unless told otherwise: n_threads caps that too,
    # so a machine shared with other work is not oversubscribed (spinning threads cost more
    # CPU than they save there).
    if "n_threads" in kwargs:
        kwargs.setdefault("n_threads_batch", kwargs["n_threads"])
    try:
        return Llama(model_path=str(path), **kwargs)
    except (ValueError, RuntimeError) as exc:
        raise LocalModelError(f"llama.cpp could not load {path}: {exc}",
                              "check the file is a complete GGUF and n_ctx fits in memory") \
            from exc


class LocalModel(OpenAIModel):
    """Same request/response handling as the OpenAI provider, with llama.cpp as the 'server'."""

    def __init__(self, path: Path, options: dict[str, Any] | None = None,
                 price: Price | None = None, llama: Any = None) -> None:
        # No HTTP client: every call goes through `_create` below.
        self.name = f"local:{path}"
        self.model = path.name
        self.price = price
        self.max_retries = 0
        self.retry_base_delay = 0.0
        self.extra_body = {}
        self.stream_with_tools_broken = False
        self.stream_options_rejected = False
        self.llama = llama if llama is not None else load_llama(path, options or {})
        # One llama context: calls from several threads would interleave its KV cache.
        self._lock = threading.Lock()

    def _create(self, params: dict[str, Any]) -> Any:
        args = {k: v for k, v in params.items() if k not in _NOT_FOR_LLAMA}
        args.update(params.get("extra_body") or {})
        if args.get("stream"):
            return self._chunks(args)
        try:
            with self._lock:
                return ChatCompletion.model_validate(self.llama.create_chat_completion(**args))
        except ValueError as exc:
            raise _map_llama_error(exc) from exc

    def _chunks(self, args: dict[str, Any]) -> Iterator[ChatCompletionChunk]:
        # The lock is held while the caller consumes the stream: tokens are produced lazily.
        with self._lock:
            try:
                for chunk in self.llama.create_chat_completion(**args):
                    yield ChatCompletionChunk.model_validate(chunk)
            except ValueError as exc:
                raise _map_llama_error(exc) from exc


def _map_llama_error(exc: ValueError) -> ModelError:
    text = str(exc)
    if "context window" in text or "exceed" in text:
        return ContextWindowExceeded(f"the request is larger than the local model's context: "
                                     f"{text}")
    return ModelError(f"the local model failed: {text}")
