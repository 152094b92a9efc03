"""Bytes sent to the LLM per step, for one scripted 10-step skill, per protocol and history mode.

A scripted LLM on loopback answers each protocol in its own format (tags text, JSON actions,
tool calls) for the same ten steps; kosmos runs the commands in a real shell. For every request
the server received, the table shows its size on the wire, and splits the total into the text
the LLM has to read (prompts, messages, outputs, call arguments), the protocol's definitions
(tools, response schema) and the JSON framing around them. The reference, measured in the same
run, is seed 001's request body written out by hand from the same messages.

    python benchmarks/protocols.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kosmos.config import Settings  # noqa: E402
from kosmos.engine.session import Session, SessionOptions  # noqa: E402
from kosmos.hosts.local import LocalRunner  # noqa: E402
from kosmos.llm.factory import make_provider  # noqa: E402
from kosmos.prompts import Prompts  # noqa: E402
from tests.helpers import ScriptOperator, make_skill  # noqa: E402
from tests.llmserver import Recorded, ScriptedLLM, call, calls  # noqa: E402

# The ten steps: (kind, text); answers: "/tmp" to the ask, nothing to the optional one.
STEPS = [
    ("cmd", "seq 1 30"),
    ("cmd", "uname -s"),
    ("message", "Half way there."),
    ("ask", "Which directory should I look at?"),
    ("cmd", "ls -1 / | head -5"),
    ("cmd", "echo checked"),
    ("ask_optional", "Anything else to check?"),
    ("cmd", "seq 1 10"),
    ("message", "Wrapping up."),
    ("done", "All checked: the directory is fine."),
]
TAGS = {"cmd": "[CMD]", "ask": "[ASK]", "ask_optional": "[ASK:optional]"}
TAGS.update({"message": "[MESSAGE]", "done": "[DONE]"})
TOOL = {
    "cmd": ("run_command", "command"),
    "ask": ("ask_user", "question"),
    "ask_optional": ("ask_user", "question"),
    "message": ("show_message", "text"),
    "done": ("finish", "summary"),
}
BODY = "## What I do\n1. Look at the system.\n2. Ask which directory.\n3. Report."


def script(protocol: str) -> list[Any]:
    out: list[Any] = []
    for i, (kind, text) in enumerate(STEPS):
        if protocol == "tags":
            out.append(f"{TAGS[kind]} {text}")
        elif protocol == "json":
            out.append(json.dumps({"action": kind, "text": text}))
        else:
            name, key = TOOL[kind]
            args: dict[str, Any] = {key: text}
            if name == "ask_user":
                args["optional"] = kind == "ask_optional"
            out.append(calls(call(name, id=f"call_{i}", **args)))
    return out


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def texts(body: dict[str, Any]) -> int:
    """UTF-8 bytes of what the LLM has to read: every text, call argument and result."""
    n = 0
    for m in body.get("messages", []):
        n += len((m.get("content") or "").encode())
        for c in m.get("tool_calls") or []:
            n += len(c["function"]["arguments"].encode())
    for part in (body.get("systemInstruction") or {}).get("parts", []):
        n += len(part.get("text", "").encode())
    for turn in body.get("contents", []):
        for part in turn["parts"]:
            n += len(part.get("text", "").encode())
            if "functionCall" in part:
                n += size(part["functionCall"]["args"])
            if "functionResponse" in part:
                n += len(part["functionResponse"]["response"]["result"].encode())
    return n


def definitions(body: dict[str, Any]) -> int:
    n = sum(
        size(body[k])
        for k in ("tools", "tool_choice", "tool_config", "response_format")
        if k in body
    )
    schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
    return n + (size(schema) if schema else 0)


def hand_built(body: dict[str, Any]) -> int:
    """seed 001 section 1, written out: model, messages (role, content), temperature, max_tokens."""
    return size(
        {
            "model": "CHEAP",
            "messages": [{"role": m["role"], "content": m["content"]} for m in body["messages"]],
            "temperature": 0.3,
            "max_tokens": 512,
        }
    )


async def run(
    llm: ScriptedLLM, provider: str, protocol: str, history: str, tmp: Path
) -> list[Recorded]:
    start = len(llm.requests)
    llm.script(*script(protocol))
    url = llm.gemini_base_url if provider == "gemini" else llm.base_url
    model = "gemini-2.0-flash" if provider == "gemini" else "CHEAP"
    p = make_provider(Settings(provider=provider, base_url=url, model=model))
    session = Session(
        make_skill(BODY, name="ten-steps"),
        params={},
        runner=LocalRunner(cwd=tmp, env={"HOME": str(tmp)}),
        provider=p,
        operator=ScriptOperator(answers=["/tmp", None]),
        prompts=Prompts.load(),
        emit=lambda event: None,
        options=SessionOptions(protocol=protocol, history_mode=history, history_max=6),
    )
    result = await session.run()
    await p.aclose()
    assert result.status == "done", (provider, protocol, history, result.message)
    return llm.requests[start:]


def main() -> None:
    llm = ScriptedLLM().start()
    rows = []
    reference: list[int] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for provider in ("openai", "gemini"):
                for protocol in ("tags", "json", "tools"):
                    for history in ("full", "last_n", "system_only"):
                        reqs = asyncio.run(run(llm, provider, protocol, history, Path(tmp)))
                        sizes = [int(r.headers["content-length"]) for r in reqs]
                        if (provider, protocol, history) == ("openai", "tags", "full"):
                            reference = [hand_built(r.body) for r in reqs]
                        content = sum(texts(r.body) for r in reqs)
                        defs = sum(definitions(r.body) for r in reqs)
                        rows.append((provider, protocol, history, sizes, content, defs))
    finally:
        llm.stop()
    steps = " ".join(f"{f's{i}':>6}" for i in range(1, 11))
    print("bytes sent to the LLM per step (request body on the wire), 10-step skill")
    print(f"{'provider':8} {'protocol':8} {'history':11} {steps} {'total':>7}")
    ref_total = sum(reference)
    print(
        f"{'seed 001 by hand (reference)':29} "
        + " ".join(f"{s:6}" for s in reference)
        + f" {ref_total:7}"
    )
    for provider, protocol, history, sizes, _, _ in rows:
        cells = " ".join(f"{s:6}" for s in sizes)
        print(f"{provider:8} {protocol:8} {history:11} {cells} {sum(sizes):7}")
    print()
    print("where the bytes go (all 10 requests)")
    head = f"{'total':>7} {'text':>7} {'defs':>7} {'framing':>8} {'vs ref':>7}"
    print(f"{'provider':8} {'protocol':8} {'history':11} {head}")
    for provider, protocol, history, sizes, content, defs in rows:
        total = sum(sizes)
        framing = total - content - defs
        print(
            f"{provider:8} {protocol:8} {history:11} {total:7} {content:7} {defs:7} "
            f"{framing:8} {total / ref_total:6.2f}x"
        )
    tags_full = rows[0][3]
    extra = sum(tags_full) - ref_total
    print()
    print(f"openai/tags/full minus the hand-built seed body: {extra} bytes over 10 requests")


if __name__ == "__main__":
    main()
