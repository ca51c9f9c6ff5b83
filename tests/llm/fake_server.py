"""A local HTTP server speaking the OpenAI Chat Completions and Anthropic Messages wire
protocols (SSE streaming included), answering from a per-test script, with fault injection."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: Any = None  # a JSON value, or raw text when `raw` is set
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[Any] | None = None  # events: dicts (JSON data), ("event", dict) pairs, or raw str
    cut_after: int | None = None  # close the connection after this many SSE events
    delay_first_s: float = 0.0


@dataclass
class FakeProvider:
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeProvider:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                payload = self.rfile.read(length)
                try:
                    body = json.loads(payload or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": payload.decode("utf-8", "replace")}
                fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "json": body})
                reply = fake.replies.pop(0) if fake.replies else Reply(
                    status=500, body={"error": {"message": "fake server: no reply scripted"}})
                if reply.delay_first_s:
                    time.sleep(reply.delay_first_s)
                if reply.sse is not None:
                    self._sse(reply)
                else:
                    data = (reply.raw if reply.raw is not None else json.dumps(reply.body)).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)

            def _sse(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                assert reply.sse is not None
                for n, item in enumerate(reply.sse):
                    if reply.cut_after is not None and n >= reply.cut_after:
                        break
                    if isinstance(item, str):
                        chunk = f"data: {item}\n\n"
                    elif isinstance(item, tuple):
                        chunk = f"event: {item[0]}\ndata: {json.dumps(item[1])}\n\n"
                    else:
                        chunk = f"data: {json.dumps(item)}\n\n"
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


# --- OpenAI chat completions ---------------------------------------------------------------


def openai_message(text: str = "", tool_calls: list[tuple[str, str, str]] | None = None,
                   usage: tuple[int, int] = (10, 5), finish: str = "stop") -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        msg["tool_calls"] = [{"id": i, "type": "function",
                              "function": {"name": n, "arguments": a}} for i, n, a in tool_calls]
        finish = "tool_calls"
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": sum(usage)}}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def openai_stream(text: str = "", tool_calls: list[tuple[str, str, str]] | None = None,
                  usage: tuple[int, int, int] | None = (10, 5, 0)) -> list[Any]:
    events: list[Any] = [_chunk({"role": "assistant", "content": ""})]
    for piece in [text[i:i + 4] for i in range(0, len(text), 4)]:
        events.append(_chunk({"content": piece}))
    for n, (cid, name, args) in enumerate(tool_calls or []):
        events.append(_chunk({"tool_calls": [{"index": n, "id": cid, "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            events.append(_chunk({"tool_calls": [{"index": n, "function": {"arguments": part}}]}))
    events.append(_chunk({}, "tool_calls" if tool_calls else "stop"))
    if usage is not None:
        events.append({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                       "model": "fake", "choices": [],
                       "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                 "total_tokens": usage[0] + usage[1],
                                 "prompt_tokens_details": {"cached_tokens": usage[2]}}})
    events.append("[DONE]")
    return events


# --- Anthropic messages ----------------------------------------------------------------------


def anthropic_stream(text: str = "", tool_calls: list[tuple[str, str, str]] | None = None,
                     usage: tuple[int, int, int, int] = (10, 5, 0, 0)) -> list[Any]:
    inp, out, cache_read, cache_write = usage
    events: list[Any] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "fake", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": 1, "cache_read_input_tokens": cache_read,
                  "cache_creation_input_tokens": cache_write}}})]
    index = 0
    if text:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "text", "text": ""}}))
        for piece in [text[i:i + 4] for i in range(0, len(text), 4)]:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for cid, name, args in tool_calls or []:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "tool_use", "id": cid,
                                                                  "name": name, "input": {}}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": args}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "tool_use" if tool_calls
                                               else "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": out}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(status: int, kind: str, message: str) -> Reply:
    return Reply(status=status, body={"type": "error", "error": {"type": kind, "message": message}})


def openai_error(status: int, message: str, code: str | None = None,
                 headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, headers=headers or {},
                 body={"error": {"message": message, "type": "invalid_request_error",
                                 "code": code}})
