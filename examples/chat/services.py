"""Reference servers for the two HTTP tools of seed 002, for trying `kosmos chat` locally.

    python examples/chat/services.py --port 8500
    kosmos chat --config examples/chat/kosmos.yaml

One process serves both services on one port:

- RAG under `/rag`: `GET /rag/health` -> `{"status": "ok"}`; `POST /rag/search` with
  `{"question": ..., "top_k": N}` -> `{"answer", "chunk_title_list", "chunk_texts"}` from a
  small built-in corpus about kosmos (word-overlap ranking).
- Haiku under `/haiku`: `GET /haiku/health`; `POST /haiku/generate_haiku` with `{"theme": ...}`
  -> `{"haiku_text", "syllables_per_line", "total_words"}`.

A bad request gets `{"error": "..."}`. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CORPUS = [
    (
        "What kosmos is",
        "kosmos runs AI skills against servers. An LLM works through a SKILL.md step by step "
        "and kosmos runs the shell commands it proposes, locally or over SSH.",
    ),
    (
        "Skills",
        "A skill is a SKILL.md file with YAML frontmatter and Markdown instructions. "
        "Skills are found in --skills-dir, ./.kosmos/skills and ~/.config/kosmos/skills.",
    ),
    (
        "Approvals",
        "In a terminal kosmos asks Run? [y/N/e] before each command; --yes approves "
        "commands without asking and --non-interactive never reads the terminal.",
    ),
    (
        "Exit codes",
        "kosmos exits 0 when done, 1 on failure, 2 on a usage error, 3 at the step limit, "
        "4 when input is needed, 5 when the LLM fails, 6 when the host is unreachable.",
    ),
    (
        "Transcripts",
        "Every run appends JSON Lines events to a transcript under ~/.local/state/kosmos/runs.",
    ),
    (
        "Что такое kosmos",
        "kosmos запускает ИИ-навыки на серверах: LLM проходит SKILL.md шаг за шагом, "
        "а kosmos выполняет предложенные команды локально или по SSH.",
    ),
    (
        "Навыки",
        "Навык — это файл SKILL.md с YAML-заголовком и инструкциями в Markdown.",
    ),
]

_WORD = re.compile(r"[\w-]+", re.UNICODE)
_VOWELS = re.compile(r"[aeiouyаеёиоуыэюя]+", re.IGNORECASE)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def syllables(line: str) -> int:
    """Vowel groups: exact for Russian, a fair estimate for English."""
    return sum(max(1, len(_VOWELS.findall(w))) for w in words(line))


def search(question: str, top_k: int) -> dict[str, Any]:
    asked = set(words(question))
    scored = sorted(
        CORPUS, key=lambda doc: len(asked & set(words(doc[0] + " " + doc[1]))), reverse=True
    )
    top = scored[:top_k]
    if not asked & set(words(top[0][0] + " " + top[0][1])):
        return {"error": f"no document matches {question!r}"}
    answer = top[0][1].split(". ")[0].rstrip(".") + "."
    return {
        "answer": answer,
        "chunk_title_list": [title for title, _ in top],
        "chunk_texts": [text for _, text in top],
    }


def haiku(theme: str) -> dict[str, Any]:
    if re.search("[а-яё]", theme, re.IGNORECASE):
        lines = [f"{theme} на заре", "тихий ветер над рекой", f"снова {theme} спит"]
    else:
        lines = [
            f"{theme} in the first light",
            "a quiet wind on the lake",
            f"and the {theme} sleeps on",
        ]
    return {
        "haiku_text": "\n".join(lines),
        "syllables_per_line": [syllables(line) for line in lines],
        "total_words": sum(len(words(line)) for line in lines),
    }


class ExampleServices:
    """Both services on one loopback port. Tests flip the attributes to reach error branches:
    `health[name]` is the status /health reports, `broken` names the endpoints that answer
    HTTP 500 with a body that is not JSON, `errors[name]` is an `error` the request answers."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.health = {"rag": "ok", "haiku": "ok"}
        self.broken: set[str] = set()
        self.errors: dict[str, str] = {}
        self.requests: list[tuple[str, Any]] = []
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ExampleServices:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def answer(self, service: str, endpoint: str, body: Any) -> dict[str, Any]:
        if service in self.errors:
            return {"error": self.errors[service]}
        if not isinstance(body, dict):
            return {"error": "expected a JSON object"}
        if endpoint == "search":
            question = str(body.get("question") or "").strip()
            if not question:
                return {"error": "question is empty"}
            return search(question, max(1, int(body.get("top_k") or 2)))
        theme = str(body.get("theme") or "").strip()
        if not theme:
            return {"error": "theme is empty"}
        return haiku(theme)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        services = self
        routes = {("rag", "search"), ("haiku", "generate_haiku")}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: without this, Nagle's algorithm and
                # delayed ACKs add ~40 ms to every answer on a kept-alive connection.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _send(self, code: int, data: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, code: int, body: Any) -> None:
                self._send(code, json.dumps(body, ensure_ascii=False).encode())

            def _route(self) -> tuple[str, str]:
                parts = self.path.split("?")[0].strip("/").split("/")
                return (parts[0], parts[1]) if len(parts) == 2 else ("", "")

            def do_GET(self) -> None:  # http.server's naming
                service, endpoint = self._route()
                if endpoint != "health" or service not in services.health:
                    self._json(404, {"error": "not found"})
                elif f"{service}/health" in services.broken:
                    self._send(500, b"Internal Server Error", "text/plain")
                else:
                    self._json(200, {"status": services.health[service]})

            def do_POST(self) -> None:
                service, endpoint = self._route()
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if (service, endpoint) not in routes:
                    self._json(404, {"error": "not found"})
                    return
                try:
                    body = json.loads(raw or b"null")
                except json.JSONDecodeError:
                    self._json(400, {"error": "the body is not JSON"})
                    return
                services.requests.append((f"{service}/{endpoint}", body))
                if f"{service}/{endpoint}" in services.broken:
                    self._send(500, b"Internal Server Error", "text/plain")
                    return
                self._json(200, services.answer(service, endpoint, body))

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="The RAG and haiku example services.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8500)
    args = parser.parse_args()
    services = ExampleServices(args.host, args.port)
    print(f"RAG:   {services.base_url}/rag\nHaiku: {services.base_url}/haiku", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        services.serve_forever()


if __name__ == "__main__":
    main()
