"""Cost of one chat turn on the TUI's chat screen against the same turn in the chat core.

Usage: python benchmarks/chat_tui_turn.py [--turns 150]

Each turn is seed 002's rag_search request (classify, select, validate, call the example
service) on loopback. The screen's figure runs from the input's submit (what Enter does) to the
input being ready again, in the app run headless: the core's work plus the screen's (a worker,
the lines mounted, the conversation scrolled and painted). Pilot's own key round trip (~0.1 s of
waiting for idle) is left out. The first and the last 20 turns show whether a long
conversation makes a turn slower.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kosmos.chat.build import open_chat  # noqa: E402
from kosmos.config import Settings  # noqa: E402
from kosmos.frontends.run import skill_library  # noqa: E402
from kosmos.prompts import Prompts  # noqa: E402
from kosmos.tui.app import KosmosApp, TuiConfig  # noqa: E402
from kosmos.tui.screens.chat import ChatScreen  # noqa: E402
from tests.chatkit import (  # noqa: E402
    Recorder,
    example_chat,
    load_services_module,
    relevant,
    select,
)
from tests.llmserver import Recorded, ScriptedLLM  # noqa: E402

QUESTION = "What is kosmos?"


def answer(record: Recorded) -> str:
    if record.system.startswith("You are the intent classifier"):
        return relevant()
    return select("rag_search", question=QUESTION)


def settings(llm: ScriptedLLM, services_url: str, home: Path) -> Settings:
    return Settings(
        base_url=llm.base_url,
        llm_retries=0,
        transcript_dir=home / "runs",
        chat=example_chat(services_url, skills=False),
    )


async def core_turns(llm: ScriptedLLM, services_url: str, turns: int) -> list[float]:
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with open_chat(
            settings(llm, services_url, Path(tmp)),
            lang="en",
            output=Recorder(),
            log_path=Path(tmp) / "chat.log",
            env={},
        ) as agent:
            agent.begin()
            for _ in range(turns):
                started = time.perf_counter()
                await agent.handle(QUESTION)
                times.append(time.perf_counter() - started)
    return times


async def tui_turns(llm: ScriptedLLM, services_url: str, turns: int) -> list[float]:
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        cfg = settings(llm, services_url, home)
        config = TuiConfig(
            settings=cfg,
            library=skill_library(cfg, [], {}, home),
            prompts=Prompts.load(),
            hosts=["local"],
            env={},
            home=home,
            chat=True,
        )
        app = KosmosApp(config)
        async with app.run_test(size=(120, 45)):

            async def ready() -> ChatScreen:
                while True:
                    screen = app.screen
                    if isinstance(screen, ChatScreen) and not screen.busy and screen.agent:
                        return screen
                    await asyncio.sleep(0.001)

            for _ in range(turns):
                screen = await ready()
                screen.input.value = QUESTION
                started = time.perf_counter()
                await screen.input.action_submit()
                while not screen.busy:  # the Submitted message is handled
                    await asyncio.sleep(0.001)
                await ready()
                times.append(time.perf_counter() - started)
    return times


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:6.2f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    args = parser.parse_args()
    llm = ScriptedLLM().start()
    llm.default = answer
    services = load_services_module().ExampleServices().start()
    try:
        await core_turns(llm, services.base_url, 5)  # warm up (imports, connections)
        core = await core_turns(llm, services.base_url, args.turns)
        tui = await tui_turns(llm, services.base_url, args.turns)
    finally:
        services.stop()
        llm.stop()
    print(f"turns: {args.turns}")
    rows = [
        ("reference: the chat core's turn (agent.handle)", core),
        ("chat screen turn, submit to input ready", tui),
        ("chat screen, first 20 turns", tui[:20]),
        ("chat screen, last 20 turns", tui[-20:]),
    ]
    for label, values in rows:
        print(f"{label:<50} {ms(values)}")
    overhead = statistics.median(tui) - statistics.median(core)
    print(f"screen overhead per turn: {overhead * 1000:.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
