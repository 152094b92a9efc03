"""Cost of one `kosmos chat` turn (classify, select, validate, call rag_search) on loopback.

Usage: python benchmarks/chat_turn.py [--turns 200] [--tools 50]

The reference is the same network work done bare in the same run: two POSTs to the scripted
LLM, the health GET and the search POST to the example service, with one httpx client. The
difference is what the chat itself adds: prompts, structured requests and validation, the
history, the log file. A second figure adds embedding pre-ranking over `--tools` skills.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kosmos.chat.build import open_chat  # noqa: E402
from tests.chatkit import (  # noqa: E402
    Recorder,
    example_chat,
    load_services_module,
    relevant,
    select,
    settings_for,
)
from tests.helpers import make_skill  # noqa: E402
from tests.llmserver import Recorded, ScriptedLLM  # noqa: E402


def answer(record: Recorded) -> str:
    body = record.body
    if "systemInstruction" in body:  # Gemini's generateContent
        system = body["systemInstruction"]["parts"][0]["text"]
    else:
        system = record.system
    if system.startswith("You are the intent classifier"):
        return relevant()
    return select("rag_search", question="What is kosmos?")


async def chat_turns(
    llm: ScriptedLLM, services_url: str, turns: int, tools: int, provider: str = "openai"
) -> list[float]:
    chat = {"skills": tools > 0}
    if tools:
        chat.update(embeddings_base_url=llm.base_url, rank_top_k=5)
    url = llm.gemini_base_url if provider == "gemini" else llm.base_url
    settings = settings_for(url, example_chat(services_url, **chat), provider=provider)
    skills = [make_skill(name=f"skill-{i}") for i in range(tools)]
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with open_chat(
            settings,
            lang="en",
            output=Recorder(),
            log_path=Path(tmp) / "chat.log",
            env={},
            skills=skills,
        ) as agent:
            for _ in range(turns):
                started = time.perf_counter()
                await agent.process("What is kosmos?")
                times.append(time.perf_counter() - started)
    return times


async def bare_turns(llm: ScriptedLLM, services_url: str, turns: int) -> list[float]:
    times: list[float] = []
    body = {"model": "CHEAP", "messages": [{"role": "user", "content": "What is kosmos?"}]}
    async with httpx.AsyncClient() as client:
        for _ in range(turns):
            started = time.perf_counter()
            for _ in range(2):
                (await client.post(f"{llm.base_url}/chat/completions", json=body)).json()
            (await client.get(f"{services_url}/rag/health")).json()
            search = {"question": "What is kosmos?", "top_k": 2}
            (await client.post(f"{services_url}/rag/search", json=search)).json()
            times.append(time.perf_counter() - started)
    return times


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:6.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--tools", type=int, default=50)
    args = parser.parse_args()
    llm = ScriptedLLM().start()
    llm.default = answer
    llm.embedder = lambda text: [float(len(text) % 7), float(text.count("kosmos")), 1.0]
    services = load_services_module().ExampleServices().start()
    try:
        # Warm up both paths once (imports, connections).
        await bare_turns(llm, services.base_url, 5)
        await chat_turns(llm, services.base_url, 5, 0)
        bare = await bare_turns(llm, services.base_url, args.turns)
        chat = await chat_turns(llm, services.base_url, args.turns, 0)
        ranked = await chat_turns(llm, services.base_url, args.turns, args.tools)
        gemini = await chat_turns(llm, services.base_url, args.turns, 0, provider="gemini")
    finally:
        services.stop()
        llm.stop()
    print(f"turns: {args.turns}")
    rows = [
        ("reference: bare HTTP, 2 LLM POSTs + health + search", bare),
        ("kosmos chat turn, 2 HTTP tools", chat),
        (f"kosmos chat turn, 2 HTTP tools + {args.tools} skills, pre-ranked", ranked),
        ("kosmos chat turn, 2 HTTP tools, on Gemini's generateContent", gemini),
    ]
    for label, values in rows:
        print(f"{label:<60} {ms(values)}")
    overhead = statistics.median(chat) - statistics.median(bare)
    print(f"chat overhead per turn: {overhead * 1000:.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
