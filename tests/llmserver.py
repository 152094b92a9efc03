"""A scripted LLM server for tests: real HTTP on loopback, replies from a list, records requests.

It speaks the OpenAI chat-completions wire format (`POST /v1/chat/completions`) and Gemini's
(`POST /v1beta/models/{model}:generateContent`); with an `embedder` set it also answers
`POST /v1/embeddings`. It runs in a thread so that tests can drive
kosmos in-process or as a subprocess alike.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Status:
    """Answer with an HTTP status (and optional body and headers) instead of a completion."""

    code: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hang:
    """Wait `seconds` before answering with `then` (a reply text by default)."""

    seconds: float
    then: Any = "[DONE] late"


@dataclass
class Raw:
    """Answer 200 with these exact bytes."""

    body: bytes
    content_type: str = "application/json"


@dataclass
class Completion:
    """A full OpenAI-style completion: text and/or tool calls."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    finish_reason: str = "stop"


def call(name: str, id: str = "call_1", **args: Any) -> dict[str, Any]:
    """An OpenAI-style tool call for a scripted Completion (Gemini answers get a functionCall)."""
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def calls(*items: dict[str, Any], content: str | None = None) -> Completion:
    """A completion that calls these tools, with optional text beside them (seed 003)."""
    return Completion(content=content, tool_calls=list(items), finish_reason="tool_calls")


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float
    port: int = 0  # the client's port: one per connection

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []

    @property
    def contents(self) -> list[dict[str, Any]]:
        """Gemini's `contents` (user/model turns)."""
        return self.body.get("contents", []) if isinstance(self.body, dict) else []

    def capabilities_used(self) -> set[str]:
        """Which of json_schema, json_mode and tools this request asked for, in either format."""
        body = self.body if isinstance(self.body, dict) else {}
        used = set()
        if body.get("tools"):
            used.add("tools")
        fmt = body.get("response_format") or {}
        gen = body.get("generationConfig") or {}
        if fmt.get("type") == "json_schema" or "responseJsonSchema" in gen:
            used.add("json_schema")
        elif fmt.get("type") == "json_object" or gen.get("responseMimeType"):
            used.add("json_mode")
        return used

    @property
    def system(self) -> str:
        return self.messages[0]["content"]

    @property
    def last_user_text(self) -> str:
        users = [m for m in self.messages if m["role"] == "user"]
        return users[-1]["content"] if users else ""


Script = str | Status | Hang | Raw | Completion | Callable[["Recorded"], Any]

# What real servers say when they do not support a capability (llama.cpp, older vLLM, Gemini).
REJECTIONS = {
    "json_schema": "response_format type json_schema is not supported by this model",
    "json_mode": "'response_format' of type 'json_object' is not supported",
    "tools": "tools are not supported for this model",
}
GEMINI_REJECTIONS = {
    "json_schema": 'Invalid JSON payload received. Unknown name "responseJsonSchema"',
    "json_mode": "responseMimeType application/json is not supported for this model",
    "tools": "Function calling is not enabled for this model",
}


def completion_body(item: str | Completion, model: str) -> dict[str, Any]:
    if isinstance(item, str):
        item = Completion(content=item)
    message: dict[str, Any] = {"role": "assistant", "content": item.content}
    if item.tool_calls:
        message["tool_calls"] = item.tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": item.finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class _Server(ThreadingHTTPServer):
    # A fleet's hosts connect at once: socketserver's backlog of 5 drops connections past it.
    request_queue_size = 128
    daemon_threads = True


class ScriptedLLM:
    """Replies from a script, in order; every request is recorded in `requests`."""

    def __init__(self) -> None:
        self._script: list[Script] = []
        self.default: Script | None = None
        self.requests: list[Recorded] = []
        # Capabilities this server refuses with HTTP 400, as a server without them does.
        self.rejects: set[str] = set()
        # text -> vector; when set, /embeddings answers with it (requests in `embedding_requests`).
        self.embedder: Callable[[str], list[float]] | None = None
        self.embedding_requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        # A short poll interval: stop() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- test API ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def gemini_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1beta"

    def reject(self, *capabilities: str) -> ScriptedLLM:
        """Answer HTTP 400 to any request that uses one of these capabilities."""
        self.rejects.update(capabilities)
        return self

    def script(self, *items: Script) -> ScriptedLLM:
        with self._lock:
            self._script.extend(items)
        return self

    @property
    def pending(self) -> int:
        return len(self._script)

    def start(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- server ------------------------------------------------------------------------

    def _next(self) -> Script | None:
        with self._lock:
            if self._script:
                return self._script.pop(0)
            return self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        llm = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in separate writes; without this, Nagle's algorithm
                # and delayed ACKs add ~40 ms to every answer on a kept-alive connection.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
                if isinstance(body, bytes):
                    data, ctype = body, "application/octet-stream"
                else:
                    data, ctype = json.dumps(body).encode(), "application/json"
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", (headers or {}).pop("Content-Type", ctype))
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:  # http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "CHEAP"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw.decode(errors="replace")
                record = Recorded(
                    "POST",
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.time(),
                    self.client_address[1],
                )
                if llm.embedder is not None and self.path.rstrip("/").endswith("/embeddings"):
                    with llm._lock:
                        llm.embedding_requests.append(record)
                    self._send(200, embeddings_body(llm.embedder, body))
                    return
                with llm._lock:
                    llm.requests.append(record)
                refused = sorted(record.capabilities_used() & llm.rejects)
                if refused:
                    gemini = ":generateContent" in record.path
                    text = (GEMINI_REJECTIONS if gemini else REJECTIONS)[refused[0]]
                    error: dict[str, Any] = {"message": text, "code": 400}
                    error["status" if gemini else "type"] = (
                        "INVALID_ARGUMENT" if gemini else "invalid_request_error"
                    )
                    self._send(400, {"error": error})
                    return
                item = llm._next()
                self._answer(item, record)

            def _answer(self, item: Any, record: Recorded) -> None:
                gemini = ":generateContent" in record.path
                model = record.body.get("model", "gemini") if isinstance(record.body, dict) else "?"
                if item is None:
                    self._send(500, {"error": {"message": "scripted LLM: script exhausted"}})
                elif callable(item) and not isinstance(item, Status | Hang | Raw | Completion):
                    self._answer(item(record), record)
                elif isinstance(item, Status):
                    body = (
                        item.body
                        if item.body is not None
                        else {"error": {"message": f"HTTP {item.code}"}}
                    )
                    self._send(item.code, body, dict(item.headers))
                elif isinstance(item, Hang):
                    time.sleep(item.seconds)
                    self._answer(item.then, record)
                elif isinstance(item, Raw):
                    self._send(200, item.body, {"Content-Type": item.content_type})
                elif gemini:
                    self._send(200, item if isinstance(item, dict) else gemini_body(item))
                elif isinstance(item, dict):
                    self._send(200, item)
                else:
                    self._send(200, completion_body(item, model))

        return Handler


def embeddings_body(embedder: Callable[[str], list[float]], body: Any) -> dict[str, Any]:
    """An OpenAI-style /embeddings answer: one vector per input, in order."""
    inputs = body.get("input", []) if isinstance(body, dict) else []
    if isinstance(inputs, str):
        inputs = [inputs]
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": embedder(text)}
            for i, text in enumerate(inputs)
        ],
        "model": body.get("model", "?") if isinstance(body, dict) else "?",
        "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
    }


def gemini_body(item: str | Completion) -> dict[str, Any]:
    """A Gemini generateContent answer with a text part (and function calls, if any)."""
    if isinstance(item, str):
        item = Completion(content=item)
    parts: list[dict[str, Any]] = []
    if item.content:
        parts.append({"text": item.content})
    for call in item.tool_calls or []:
        fn = call.get("function", call)  # an OpenAI-style call or a bare {name, args}
        args = fn.get("arguments", fn.get("args", {}))
        if isinstance(args, str):
            args = json.loads(args or "{}")
        parts.append({"functionCall": {"name": fn["name"], "args": args}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }


def main() -> None:
    """Serve scripted replies for trying kosmos by hand: `python -m tests.llmserver REPLY...`."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("replies", nargs="*", help="reply texts, in order")
    parser.add_argument("--default", default=None, help="reply once the script is used up")
    args = parser.parse_args()
    server = ScriptedLLM()
    server.script(*args.replies)
    server.default = args.default
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._server.serve_forever()


if __name__ == "__main__":
    main()
